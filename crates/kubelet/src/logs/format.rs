//! Parsing one line of a CRI-format log file.

/// Which output stream a record came from (upstream's `runtimeapi.LogStreamType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStream {
    /// `stdout`
    Stdout,
    /// `stderr`
    Stderr,
}

impl LogStream {
    /// The stream's name in the log file and in the `stream` log option.
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
        }
    }
}

/// One parsed record of a CRI log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord<'a> {
    /// The time text as written (RFC3339Nano, any offset).
    pub time_text: &'a str,
    /// The time, parsed.
    pub time: jiff::Timestamp,
    /// The stream.
    pub stream: LogStream,
    /// `true` for a `P` (partial) record: `message` does not end a line.
    pub partial: bool,
    /// The message, without the record's trailing newline; a full (`F`)
    /// record's output is `message` plus `\n`.
    pub message: &'a [u8],
}

/// Parses one line (with or without its trailing `\n`) as upstream's
/// `parseCRILog`: time, stream, tags (first of `:`-separated is `F`/`P`),
/// message. Errors describe what is malformed.
pub fn parse_cri_line(line: &[u8]) -> Result<LogRecord<'_>, String> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut fields = line.splitn(4, |b| *b == b' ');
    let time_bytes = fields.next().filter(|f| !f.is_empty()).ok_or("timestamp is not found")?;
    let time_text = std::str::from_utf8(time_bytes).map_err(|_| "unexpected timestamp format")?;
    let time: jiff::Timestamp =
        time_text.parse().map_err(|e| format!("unexpected timestamp format {time_text:?}: {e}"))?;
    let stream = match fields.next() {
        Some(b"stdout") => LogStream::Stdout,
        Some(b"stderr") => LogStream::Stderr,
        Some(other) => return Err(format!("unexpected stream type {:?}", String::from_utf8_lossy(other))),
        None => return Err("stream type is not found".into()),
    };
    let tags = fields.next().ok_or("log tag is not found")?;
    let partial = match tags.split(|b| *b == b':').next() {
        Some(b"P") => true,
        Some(b"F") => false,
        _ => return Err(format!("unexpected log tag {:?}", String::from_utf8_lossy(tags))),
    };
    let message = fields.next().unwrap_or(b"");
    Ok(LogRecord { time_text, time, stream, partial, message })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_and_partial_records() {
        let r = parse_cri_line(b"2016-10-06T00:17:09.669794202Z stdout F log content 1\n").unwrap();
        assert_eq!(r.time_text, "2016-10-06T00:17:09.669794202Z");
        assert_eq!((r.stream, r.partial, r.message), (LogStream::Stdout, false, &b"log content 1"[..]));
        let r = parse_cri_line(b"2016-10-06T00:17:09.669794203+02:00 stderr P:x part").unwrap();
        assert_eq!((r.stream, r.partial, r.message), (LogStream::Stderr, true, &b"part"[..]));
        // An empty message is a blank line.
        let r = parse_cri_line(b"2016-10-06T00:17:09Z stdout F\n").unwrap();
        assert_eq!(r.message, b"");
        assert!(parse_cri_line(b"garbage").is_err());
        assert!(parse_cri_line(b"2016-10-06T00:17:09Z stdin F x").is_err());
        assert!(parse_cri_line(b"2016-10-06T00:17:09Z stdout X x").is_err());
    }
}
