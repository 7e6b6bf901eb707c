//! The error Go's `json.Unmarshal(data, &map[string]interface{}{})` gives,
//! which upstream puts verbatim into Secret validation messages
//! (`.dockercfg` and `.dockerconfigjson`): the scanner's `SyntaxError`
//! texts (`invalid character 'x' looking for beginning of value`,
//! `unexpected end of JSON input`, …) and the type error for a valid
//! document that is not an object.

/// `None` when `data` unmarshals into a `map[string]interface{}` (an
/// object or `null`), else Go's error text.
pub fn unmarshal_map_error(data: &[u8]) -> Option<String> {
    let mut s = Scanner { data, pos: 0, depth: 0 };
    if let Err(e) = s.document() {
        return Some(e);
    }
    let first = data.iter().find(|b| !is_space(**b)).copied().unwrap_or(b'n');
    let kind = match first {
        b'{' | b'n' => return None,
        b'"' => "string",
        b'[' => "array",
        b't' | b'f' => "bool",
        _ => "number",
    };
    Some(format!("json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"))
}

/// Go's scanner error for `data` that is not valid JSON (`invalid
/// character 'x' after object key`, `unexpected end of JSON input`, …),
/// or `None` for a valid document.
pub fn syntax_error(data: &[u8]) -> Option<String> {
    Scanner { data, pos: 0, depth: 0 }.document().err()
}

/// How deep the scanner nests before refusing. Go allows 10,000 levels;
/// this recursive scanner stops earlier so that hostile input cannot
/// exhaust a server thread's stack.
const MAX_DEPTH: usize = 1000;

const EOF: &str = "unexpected end of JSON input";

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: `'x'`, with Go escapes for unprintable bytes.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        7 => r"'\a'".into(),
        8 => r"'\b'".into(),
        12 => r"'\f'".into(),
        b'\n' => r"'\n'".into(),
        b'\r' => r"'\r'".into(),
        b'\t' => r"'\t'".into(),
        11 => r"'\v'".into(),
        b'\\' => r"'\\'".into(),
        c if c < 0x20 || c == 0x7f => format!(r"'\x{c:02x}'"),
        c if (0x80..0xa0).contains(&c) => format!(r"'\u{:04x}'", c as u32),
        c => format!("'{}'", char::from(c)),
    }
}

struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
    depth: usize,
}

type Res = Result<(), String>;

impl Scanner<'_> {
    fn invalid(c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote_char(c))
    }

    fn skip_space(&mut self) {
        while self.data.get(self.pos).is_some_and(|b| is_space(*b)) {
            self.pos += 1;
        }
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = *self.data.get(self.pos).ok_or(EOF)?;
        self.pos += 1;
        Ok(c)
    }

    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    fn document(&mut self) -> Res {
        self.value()?;
        self.skip_space();
        match self.peek() {
            None => Ok(()),
            Some(c) => Err(Self::invalid(c, "after top-level value")),
        }
    }

    fn value(&mut self) -> Res {
        self.skip_space();
        match self.next()? {
            c @ (b'{' | b'[') => {
                if self.depth >= MAX_DEPTH {
                    return Err(Self::invalid(c, "exceeded max depth"));
                }
                self.depth += 1;
                let result = if c == b'{' { self.object() } else { self.array() };
                self.depth -= 1;
                result
            }
            b'"' => self.string(),
            c @ (b'-' | b'0'..=b'9') => self.number(c),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            c => Err(Self::invalid(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Res {
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            match self.next()? {
                b'"' => self.string()?,
                c => return Err(Self::invalid(c, "looking for beginning of object key string")),
            }
            self.skip_space();
            match self.next()? {
                b':' => {}
                c => return Err(Self::invalid(c, "after object key")),
            }
            self.value()?;
            self.skip_space();
            match self.next()? {
                b',' => self.skip_space(),
                b'}' => return Ok(()),
                c => return Err(Self::invalid(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Res {
        self.skip_space();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_space();
            match self.next()? {
                b',' => {}
                b']' => return Ok(()),
                c => return Err(Self::invalid(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Res {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let h = self.next()?;
                            if !h.is_ascii_hexdigit() {
                                return Err(Self::invalid(h, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(Self::invalid(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(Self::invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    fn number(&mut self, first: u8) -> Res {
        let lead = if first == b'-' { self.next()? } else { first };
        match lead {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            c => return Err(Self::invalid(c, "in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(Self::invalid(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            let mut c = self.next()?;
            if c == b'+' || c == b'-' {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(Self::invalid(c, "in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Res {
        for expected in word.bytes().skip(1) {
            let c = self.next()?;
            if c != expected {
                let ctx = format!("in literal {word} (expecting {})", quote_char(expected));
                return Err(Self::invalid(c, &ctx));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_read_as_go_scanner_errors() {
        assert_eq!(syntax_error(br#"{"a":1"#).as_deref(), Some("unexpected end of JSON input"));
        assert_eq!(syntax_error(br#"{"a" 1}"#).as_deref(), Some("invalid character '1' after object key"));
        assert_eq!(syntax_error(br#"{"a":1}"#), None);
        // Hostile nesting is refused, not followed until the stack runs out.
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(syntax_error(deep.as_bytes()).as_deref(), Some("invalid character '[' exceeded max depth"));
        assert!(unmarshal_map_error(deep.as_bytes()).is_some());
    }

    #[test]
    fn go_unmarshal_errors() {
        let err = |s: &str| unmarshal_map_error(s.as_bytes());
        assert_eq!(err(r#"{"auths": {}}"#), None);
        assert_eq!(err("null"), None);
        assert_eq!(err("").as_deref(), Some("unexpected end of JSON input"));
        assert_eq!(err(r#"{"a": "#).as_deref(), Some("unexpected end of JSON input"));
        assert_eq!(err("nope").as_deref(), Some("invalid character 'o' in literal null (expecting 'u')"));
        assert_eq!(err("x").as_deref(), Some("invalid character 'x' looking for beginning of value"));
        assert_eq!(err("{} x").as_deref(), Some("invalid character 'x' after top-level value"));
        assert_eq!(
            err("{'a': 1}").as_deref(),
            Some(r"invalid character '\'' looking for beginning of object key string")
        );
        assert_eq!(err(r#"{"a" 1}"#).as_deref(), Some("invalid character '1' after object key"));
        assert_eq!(err(r#"{"a": 1 "b"}"#).as_deref(), Some(r#"invalid character '"' after object key:value pair"#));
        assert_eq!(err("[1 2]").as_deref(), Some("invalid character '2' after array element"));
        assert_eq!(err("-x").as_deref(), Some("invalid character 'x' in numeric literal"));
        assert_eq!(
            err("[1]").as_deref(),
            Some("json: cannot unmarshal array into Go value of type map[string]interface {}")
        );
        assert_eq!(
            err(r#""s""#).as_deref(),
            Some("json: cannot unmarshal string into Go value of type map[string]interface {}")
        );
    }
}
