//! `rkube`: Kubernetes in one binary.
//!
//! Exit status: 0 after a clean shutdown (SIGTERM/SIGINT), 1 when the
//! server fails, 2 for invalid command-line flags.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches};
use tracing_subscriber::EnvFilter;

mod agent;
mod cli;
mod controllers;
mod controlplane_join;
mod dns;
mod images;
mod killall;
mod net;
mod networking;
mod policy;
mod ready;
mod scheduler;
mod server;
mod store;
mod token;

use cli::{Cli, Command};

fn main() -> ExitCode {
    let version: &'static str = Box::leak(cli::version_string().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    init_logging(&cli);

    match cli.command {
        Command::Server(args) => {
            if let Err(msg) = cli::validate(&args) {
                eprintln!("error: {msg}\n\nFor more information, try 'rkube server --help'.");
                return ExitCode::from(2);
            }
            let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(component = "rkube", "cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let result = runtime.block_on(server::run(args));
            // Don't let a stuck background task hold the process.
            runtime.shutdown_timeout(Duration::from_secs(5));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(component = "rkube", "{e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Agent(args) => {
            let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let result = runtime.block_on(agent::run(args));
            runtime.shutdown_timeout(Duration::from_secs(5));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Images(cmd) => images::run(cmd),
        Command::Store(cmd) => store::run(cmd),
        Command::Killall(args) => match killall::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Token(cli::TokenCommand::Create(args)) => {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let kubeconfig = args.kubeconfig.unwrap_or_else(|| args.data_dir.join("admin.kubeconfig"));
            match runtime.block_on(token::create(kubeconfig, args.ttl, args.description, args.control_plane)) {
                Ok(join_token) => {
                    println!("{join_token}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Logs go to stderr through `tracing`: `--log-level` (a level or
/// RUST_LOG-style directives) wins, then `-v`/`-vv`, then `$RUST_LOG`,
/// then `info` — without hickory-server's line per DNS query (as CoreDNS
/// logs no queries without its `log` plugin; `--log-level
/// info,hickory_server=info` shows them).
fn init_logging(cli: &Cli) {
    let filter = match (&cli.log_level, cli.verbose) {
        (Some(directives), _) => EnvFilter::try_new(directives).unwrap_or_else(|e| {
            eprintln!("warning: invalid --log-level {directives:?} ({e}); using info");
            EnvFilter::new("info")
        }),
        (None, 1) => EnvFilter::new("debug"),
        (None, v) if v >= 2 => EnvFilter::new("trace"),
        _ => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,hickory_server=warn")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
