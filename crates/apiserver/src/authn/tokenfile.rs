//! The static token file (`--token-auth-file`), as upstream's `tokenfile`
//! authenticator reads it.
//!
//! A CSV file, one record per line: `token,user,uid[,"group1,group2"]`.
//! Quoted fields may hold commas and `""` for a quote (Go's
//! `encoding/csv`); blank lines are skipped. A record with fewer than three
//! fields fails the whole file (upstream's message); an empty token is
//! skipped with a warning; a duplicate token replaces the earlier one with
//! a warning. Groups are the fourth field split on `,`, verbatim.

use std::collections::HashMap;
use std::path::Path;

use super::UserInfo;

/// The users of a token file, by token.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads and parses `path`. Errors name the file and the problem (an
    /// I/O error, a malformed quote, a short record).
    pub fn load(path: &Path) -> Result<TokenFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("open {}: {e}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses CSV `text`; `name` is the file name used in messages.
    pub fn parse(text: &str, name: &str) -> Result<TokenFile, String> {
        let mut tokens = HashMap::new();
        let mut record_num = 0;
        for (line, record) in parse_csv(text)? {
            if record.len() < 3 {
                return Err(format!(
                    "token file '{name}' must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                ));
            }
            record_num += 1;
            if record[0].is_empty() {
                tracing::warn!(
                    component = crate::COMPONENT,
                    file = name,
                    record = record_num,
                    line,
                    "empty token in the token file"
                );
                continue;
            }
            let groups = record.get(3).map(|g| g.split(',').map(str::to_string).collect()).unwrap_or_default();
            let user = UserInfo { name: record[1].clone(), uid: record[2].clone(), groups, ..UserInfo::default() };
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(
                    component = crate::COMPONENT,
                    file = name,
                    record = record_num,
                    line,
                    "duplicate token in the token file"
                );
            }
        }
        Ok(TokenFile { tokens })
    }

    /// The user `token` names (without `system:authenticated`, which the
    /// chain adds), if any.
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Go `encoding/csv` records (`FieldsPerRecord = -1`) with their 1-based
/// starting line; blank lines produce none.
fn parse_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        // Blank line (Go skips empty lines).
        if matches!(chars.peek(), Some('\n')) {
            chars.next();
            line += 1;
            continue;
        }
        if matches!(chars.peek(), Some('\r')) {
            let mut look = chars.clone();
            look.next();
            if matches!(look.peek(), Some('\n') | None) {
                chars.next();
                continue;
            }
        }
        let mut record = Vec::new();
        loop {
            let mut field = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            field.push(c);
                        }
                        None => {
                            return Err(format!("record on line {start}: extraneous or missing \" in quoted-field"))
                        }
                    }
                }
                if !matches!(chars.peek(), Some(',') | Some('\n') | Some('\r') | None) {
                    return Err(format!("parse error on line {line}: extraneous or missing \" in quoted-field"));
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ',' || c == '\n' {
                        break;
                    }
                    if c == '"' {
                        return Err(format!("parse error on line {line}: bare \" in non-quoted-field"));
                    }
                    field.push(c);
                    chars.next();
                }
                if field.ends_with('\r') && chars.peek() != Some(&',') {
                    field.pop();
                }
            }
            if chars.peek() == Some(&'\r') {
                chars.next();
            }
            record.push(field);
            match chars.next() {
                Some(',') => continue,
                Some('\n') => {
                    line += 1;
                    break;
                }
                _ => break,
            }
        }
        records.push((start, record));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_map_tokens_to_users_with_quoted_groups() {
        let text = "t1,alice,uid-1,\"dev,ops\"\n\nt2,bob,uid-2\r\n,nobody,x\nt3,\"carol \"\"c\"\"\",u3,single\n";
        let file = TokenFile::parse(text, "tokens.csv").unwrap();
        assert_eq!(file.len(), 3);
        let alice = file.user("t1").unwrap();
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "uid-1"));
        assert_eq!(alice.groups, ["dev", "ops"]);
        let bob = file.user("t2").unwrap();
        assert_eq!((bob.name.as_str(), bob.uid.as_str()), ("bob", "uid-2"));
        assert!(bob.groups.is_empty());
        assert_eq!(file.user("t3").unwrap().name, "carol \"c\"");
        assert_eq!(file.user("t3").unwrap().groups, ["single"]);
        assert!(file.user("").is_none());
        assert!(file.user("t4").is_none());
    }

    #[test]
    fn short_records_and_bad_quotes_fail_the_file() {
        assert_eq!(
            TokenFile::parse("t1,alice\n", "f.csv").unwrap_err(),
            "token file 'f.csv' must have at least 3 columns (token, user name, user uid), found 2"
        );
        assert!(TokenFile::parse("t1,\"alice,u\n", "f.csv").is_err());
        assert!(TokenFile::parse("t1,al\"ice,u\n", "f.csv").is_err());
    }

    #[test]
    fn a_later_duplicate_wins() {
        let file = TokenFile::parse("t,a,1\nt,b,2\n", "f").unwrap();
        assert_eq!(file.user("t").unwrap().name, "b");
    }
}
