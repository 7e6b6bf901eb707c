//! Whether a pattern is a valid Go regular expression (RE2 syntax as Go's
//! `regexp.Compile` parses it, with `syntax.Perl` flags), and if not, the
//! error text Go gives: `error parsing regexp: <code>: ` + "`" + `<expr>` +
//! "`". Upstream puts that text into validation messages, e.g. a CRD
//! schema's `pattern` (`must be a valid regular expression, but isn't:
//! error parsing regexp: missing argument to repetition operator: ` + "`+`").
//!
//! This is a syntax checker written from the documented grammar and error
//! codes of Go's `regexp/syntax` (it builds no program). It reports the
//! first error in the same order Go's parser meets it, for: unbalanced
//! parentheses and brackets, repetition without an argument or stacked
//! repetitions, repeat counts over 1000 or reversed, bad escapes, trailing
//! backslashes, bad or unsupported `(?…)` groups, invalid capture names,
//! reversed class ranges, unknown POSIX and Unicode classes. Not checked:
//! the size limits (`expression too large`, nested repeat products over
//! 1000, nesting deeper than 1000), which only hostile patterns reach.

/// Go's `regexp.Compile(pattern)` error text, or `None` when Go accepts it.
pub fn compile_error(pattern: &str) -> Option<String> {
    Parser { s: pattern }.parse().err().map(|(code, expr)| format!("error parsing regexp: {code}: `{expr}`"))
}

const INVALID_CHAR_RANGE: &str = "invalid character class range";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const MISSING_BRACKET: &str = "missing closing ]";
const MISSING_PAREN: &str = "missing closing )";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const UNEXPECTED_PAREN: &str = "unexpected )";

/// The largest repeat count Go accepts.
const MAX_REPEAT: u64 = 1000;

/// POSIX classes Go knows inside brackets (`[[:alpha:]]`, negated `[[:^alpha:]]`).
const POSIX_CLASSES: [&str; 14] = [
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "word",
    "xdigit",
];

/// Unicode general categories Go's `unicode.Categories` holds, plus `Any`.
const UNICODE_CATEGORIES: [&str; 37] = [
    "Any", "C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn", "N", "Nd", "Nl",
    "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

type ParseError = (&'static str, String);

struct Parser<'a> {
    s: &'a str,
}

/// The first char of `t` and the rest (Go's `nextRune`; the empty string
/// gives `None`).
fn next(t: &str) -> (Option<char>, &str) {
    let mut it = t.chars();
    let c = it.next();
    (c, it.as_str())
}

/// The text of `from` that was consumed before `rest` (Go's
/// `before[:len(before)-len(rest)]`).
fn consumed<'a>(from: &'a str, rest: &str) -> &'a str {
    &from[..from.len() - rest.len()]
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn unhex(c: char) -> Option<u32> {
    c.to_digit(16)
}

/// A Unicode class name Go's `unicodeTable` resolves: `Any`, a general
/// category or a script (`Greek`, `Old_Italic`, …; case-sensitive).
/// Scripts are looked up in the `regex` crate's Unicode tables, which
/// also match looser spellings (`OldItalic`, the four-letter `Grek`) that
/// Go refuses; the shape check keeps out only lower-case ones.
fn known_unicode_name(name: &str) -> bool {
    if UNICODE_CATEGORIES.contains(&name) {
        return true;
    }
    let shaped = name.len() > 2
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    shaped && regex::Regex::new(&format!(r"\p{{sc={name}}}")).is_ok()
}

impl Parser<'_> {
    fn parse(&self) -> Result<(), ParseError> {
        let whole = self.s;
        let mut t = whole;
        // Open groups, and whether the top of Go's parse stack is an
        // operand (not a `(` or `|` marker, nor empty).
        let mut open = 0usize;
        let mut operand = false;
        // The text from the previous iteration's repetition operator on.
        let mut last_repeat: Option<&str> = None;
        while let (Some(c), rest) = next(t) {
            let mut repeat = None;
            match c {
                '(' => {
                    if rest.starts_with('?') {
                        match self.perl_flags(t)? {
                            (after, Some(_)) => {
                                open += 1;
                                operand = false;
                                t = after;
                            }
                            (after, None) => t = after,
                        }
                    } else {
                        open += 1;
                        operand = false;
                        t = rest;
                    }
                }
                '|' => {
                    operand = false;
                    t = rest;
                }
                ')' => {
                    if open == 0 {
                        return Err((UNEXPECTED_PAREN, whole.to_string()));
                    }
                    open -= 1;
                    operand = true;
                    t = rest;
                }
                '^' | '$' | '.' => {
                    operand = true;
                    t = rest;
                }
                '[' => {
                    t = self.class(t)?;
                    operand = true;
                }
                '*' | '+' | '?' => {
                    let before = t;
                    let after = self.repeat(before, rest, last_repeat, operand)?;
                    repeat = Some(before);
                    operand = true;
                    t = after;
                }
                '{' => match parse_repeat(t) {
                    None => {
                        operand = true;
                        t = rest;
                    }
                    Some((min, max, after)) => {
                        let before = t;
                        let too_big = |n: Option<u64>| n.is_none_or(|n| n > MAX_REPEAT);
                        let bad = too_big(min)
                            || max.is_some_and(too_big)
                            || matches!((min, max), (Some(a), Some(Some(b))) if b < a);
                        if bad {
                            return Err((INVALID_REPEAT_SIZE, consumed(before, after).to_string()));
                        }
                        let after = self.repeat(before, after, last_repeat, operand)?;
                        repeat = Some(before);
                        operand = true;
                        t = after;
                    }
                },
                '\\' => {
                    let (c2, rest2) = next(rest);
                    match c2 {
                        Some('A' | 'b' | 'B' | 'z') => {
                            operand = true;
                            t = rest2;
                        }
                        Some('C') => return Err((INVALID_ESCAPE, consumed(t, rest2).to_string())),
                        Some('Q') => {
                            let (lit, after) = rest2.split_once(r"\E").unwrap_or((rest2, ""));
                            if !lit.is_empty() {
                                operand = true;
                            }
                            t = after;
                        }
                        _ => {
                            t = if let Some(after) = unicode_class(t)? {
                                after
                            } else if let Some(after) = perl_class(t) {
                                after
                            } else {
                                escape(t)?
                            };
                            operand = true;
                        }
                    }
                }
                _ => {
                    operand = true;
                    t = rest;
                }
            }
            last_repeat = repeat;
        }
        if open > 0 {
            return Err((MISSING_PAREN, whole.to_string()));
        }
        Ok(())
    }

    /// A repetition operator starting at `before` whose operator text ends
    /// at `after`: an optional `?` (non-greedy) is consumed; a repetition
    /// right after another, or without an operand, is an error.
    fn repeat<'b>(
        &self,
        before: &'b str,
        after: &'b str,
        last_repeat: Option<&str>,
        operand: bool,
    ) -> Result<&'b str, ParseError> {
        let after = after.strip_prefix('?').unwrap_or(after);
        if let Some(last) = last_repeat {
            return Err((INVALID_REPEAT_OP, last[..last.len() - after.len()].to_string()));
        }
        if !operand {
            return Err((MISSING_REPEAT_ARGUMENT, consumed(before, after).to_string()));
        }
        Ok(after)
    }

    /// `t` starts with `(?`: a named capture, a non-capturing group
    /// (`(?flags:`) or a flag setting (`(?flags)`). Returns the rest and
    /// `Some(())` when a group was opened.
    fn perl_flags<'b>(&self, s: &'b str) -> Result<(&'b str, Option<()>), ParseError> {
        let named = if s.starts_with("(?P<") && s.len() > 4 {
            Some(4)
        } else if s.starts_with("(?<") && s.len() > 3 {
            Some(3)
        } else {
            None
        };
        if let Some(begin) = named {
            let Some(end) = s.find('>') else {
                return Err((INVALID_NAMED_CAPTURE, s.to_string()));
            };
            let name = &s[begin..end];
            if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                return Err((INVALID_NAMED_CAPTURE, s[..=end].to_string()));
            }
            return Ok((&s[end + 1..], Some(())));
        }
        let mut t = &s[2..];
        let mut negated = false;
        let mut saw_flag = false;
        loop {
            let (c, rest) = next(t);
            t = rest;
            match c {
                Some('i' | 'm' | 's' | 'U') => saw_flag = true,
                Some('-') if !negated => {
                    negated = true;
                    saw_flag = false;
                }
                Some(c @ (':' | ')')) if !negated || saw_flag => {
                    return Ok((t, (c == ':').then_some(())));
                }
                _ => return Err((INVALID_PERL_OP, consumed(s, t).to_string())),
            }
        }
    }

    /// A bracketed class starting at `s` (`[`); returns the rest after `]`.
    fn class<'b>(&self, s: &'b str) -> Result<&'b str, ParseError> {
        let mut t = &s[1..];
        if let Some(rest) = t.strip_prefix('^') {
            t = rest;
        }
        let mut first = true;
        while t.is_empty() || !t.starts_with(']') || first {
            first = false;
            if t.starts_with("[:") {
                if let Some(i) = t[2..].find(":]") {
                    let name = &t[..i + 4];
                    let inner = &t[2..i + 2];
                    let inner = inner.strip_prefix('^').unwrap_or(inner);
                    if !POSIX_CLASSES.contains(&inner) {
                        return Err((INVALID_CHAR_RANGE, name.to_string()));
                    }
                    t = &t[i + 4..];
                    continue;
                }
            }
            if let Some(after) = unicode_class(t)? {
                t = after;
                continue;
            }
            if let Some(after) = perl_class(t) {
                t = after;
                continue;
            }
            let range = t;
            let (lo, after) = class_char(t, s)?;
            t = after;
            if t.len() >= 2 && t.starts_with('-') && !t[1..].starts_with(']') {
                let (hi, after) = class_char(&t[1..], s)?;
                t = after;
                if hi < lo {
                    return Err((INVALID_CHAR_RANGE, consumed(range, t).to_string()));
                }
            }
        }
        Ok(&t[1..])
    }
}

/// `{min}`, `{min,}` or `{min,max}` at the start of `s`: `(min, max,
/// rest)`, with `None` for a count too large to read and `Some(None)`
/// max for `{min,}`; `None` when `s` is not a repeat (then `{` is a
/// literal).
#[allow(clippy::type_complexity)]
fn parse_repeat(s: &str) -> Option<(Option<u64>, Option<Option<u64>>, &str)> {
    let t = s.strip_prefix('{')?;
    let (min, t) = parse_int(t)?;
    let (max, t) = if let Some(t) = t.strip_prefix(',') {
        if let Some(t) = t.strip_prefix('}') {
            return Some((min, None, t));
        }
        let (max, t) = parse_int(t)?;
        (Some(max), t)
    } else {
        (Some(min), t)
    };
    let t = t.strip_prefix('}')?;
    // `{n}` means exactly n: max = min.
    Some((min, max, t))
}

/// Decimal digits without a leading zero (a lone `0` is fine); `None`
/// inside the pair when the value is too large to matter.
fn parse_int(s: &str) -> Option<(Option<u64>, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || (digits >= 2 && s.starts_with('0')) {
        return None;
    }
    let n = if digits >= 8 { None } else { s[..digits].parse().ok() };
    Some((n, &s[digits..]))
}

/// `\pX`, `\p{Name}`, `\PX`, `\P{^Name}` at the start of `s`.
fn unicode_class(s: &str) -> Result<Option<&str>, ParseError> {
    if !(s.starts_with(r"\p") || s.starts_with(r"\P")) {
        return Ok(None);
    }
    let t = &s[2..];
    let (c, rest) = next(t);
    let (seq, name, rest) = if c == Some('{') {
        let Some(end) = s.find('}') else {
            return Err((INVALID_CHAR_RANGE, s.to_string()));
        };
        (&s[..=end], &s[3..end], &s[end + 1..])
    } else {
        let seq = consumed(s, rest);
        (seq, &seq[2..], rest)
    };
    let name = name.strip_prefix('^').unwrap_or(name);
    if !known_unicode_name(name) {
        return Err((INVALID_CHAR_RANGE, seq.to_string()));
    }
    Ok(Some(rest))
}

/// `\d`, `\D`, `\s`, `\S`, `\w`, `\W` at the start of `s`.
fn perl_class(s: &str) -> Option<&str> {
    let t = s.strip_prefix('\\')?;
    let (c, rest) = next(t);
    matches!(c, Some('d' | 'D' | 's' | 'S' | 'w' | 'W')).then_some(rest)
}

/// A class member: a char or an escape; `whole` is the class from `[`.
fn class_char<'b>(s: &'b str, whole: &str) -> Result<(u32, &'b str), ParseError> {
    match next(s) {
        (None, _) => Err((MISSING_BRACKET, whole.to_string())),
        (Some('\\'), _) => {
            let rest = escape(s)?;
            Ok((escape_value(consumed(s, rest)), rest))
        }
        (Some(c), rest) => Ok((c as u32, rest)),
    }
}

/// The code point an escape (already checked by [`escape`]) stands for.
fn escape_value(esc: &str) -> u32 {
    let body = &esc[1..];
    let c = body.chars().next().unwrap_or('\\');
    match c {
        '0'..='7' => u32::from_str_radix(body, 8).unwrap_or(0),
        'x' => {
            let hex = body[1..].trim_start_matches('{').trim_end_matches('}');
            u32::from_str_radix(hex, 16).unwrap_or(0)
        }
        'a' => 7,
        'f' => 12,
        'n' => 10,
        'r' => 13,
        't' => 9,
        'v' => 11,
        c => c as u32,
    }
}

/// A single-character escape at the start of `s` (`\`); returns the rest.
fn escape(s: &str) -> Result<&str, ParseError> {
    let t = &s[1..];
    let (c, mut t) = next(t);
    let Some(c) = c else {
        return Err((TRAILING_BACKSLASH, String::new()));
    };
    let ok = match c {
        '1'..='7' if !t.starts_with(|d: char| ('0'..='7').contains(&d)) => false,
        '0'..='7' => {
            // Up to two more octal digits.
            for _ in 0..2 {
                match next(t) {
                    (Some('0'..='7'), rest) => t = rest,
                    _ => break,
                }
            }
            true
        }
        'x' => {
            let (c, rest) = next(t);
            t = rest;
            match c {
                None => false,
                Some('{') => {
                    let mut digits = 0;
                    let mut value: u32 = 0;
                    loop {
                        let (c, rest) = next(t);
                        t = rest;
                        match c {
                            Some('}') => break digits > 0,
                            Some(c) => match unhex(c) {
                                Some(v) => {
                                    value = value.saturating_mul(16).saturating_add(v);
                                    if value > 0x10FFFF {
                                        break false;
                                    }
                                    digits += 1;
                                }
                                None => break false,
                            },
                            None => break false,
                        }
                    }
                }
                Some(x) => {
                    let (y, rest) = next(t);
                    t = rest;
                    unhex(x).is_some() && y.and_then(unhex).is_some()
                }
            }
        }
        'a' | 'f' | 'n' | 'r' | 't' | 'v' => true,
        c => c.is_ascii() && !is_alnum(c),
    };
    if ok {
        Ok(t)
    } else {
        Err((INVALID_ESCAPE, consumed(s, t).to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::compile_error;

    /// Go's `regexp.Compile` errors (go1.22+, `regexp/syntax` error codes).
    #[test]
    fn invalid_patterns_get_gos_errors() {
        for (pattern, want) in [
            ("+", "missing argument to repetition operator: `+`"),
            ("*a", "missing argument to repetition operator: `*`"),
            ("a|*", "missing argument to repetition operator: `*`"),
            ("(*)", "missing argument to repetition operator: `*`"),
            ("??", "missing argument to repetition operator: `??`"),
            ("{2}", "missing argument to repetition operator: `{2}`"),
            ("a**", "invalid nested repetition operator: `**`"),
            ("a*?+", "invalid nested repetition operator: `*?+`"),
            ("a+{2}", "invalid nested repetition operator: `+{2}`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("a{3,2}", "invalid repeat count: `{3,2}`"),
            ("(", "missing closing ): `(`"),
            ("(abc", "missing closing ): `(abc`"),
            ("a(b(c)d", "missing closing ): `a(b(c)d`"),
            ("abc)", "unexpected ): `abc)`"),
            ("a)b(", "unexpected ): `a)b(`"),
            ("[a", "missing closing ]: `[a`"),
            ("x[^", "missing closing ]: `[^`"),
            ("[]", "missing closing ]: `[]`"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
            (r"\p{Foo}", r"invalid character class range: `\p{Foo}`"),
            (r"\pX", r"invalid character class range: `\pX`"),
            (r"\q", r"invalid escape sequence: `\q`"),
            (r"(a)\1", r"invalid escape sequence: `\1`"),
            (r"\C", r"invalid escape sequence: `\C`"),
            (r"\xZZ", r"invalid escape sequence: `\xZZ`"),
            (r"\x{zz}", r"invalid escape sequence: `\x{z`"),
            (r"\x{}", r"invalid escape sequence: `\x{}`"),
            (r"[\b]", r"invalid escape sequence: `\b`"),
            ("a\\", "trailing backslash at end of expression: ``"),
            ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
            ("(?!a)", "invalid or unsupported Perl syntax: `(?!`"),
            // Since Go 1.22 `(?<` starts a named capture.
            ("(?<=a)b", "invalid named capture: `(?<=a)b`"),
            ("(?<", "invalid or unsupported Perl syntax: `(?<`"),
            ("(?", "invalid or unsupported Perl syntax: `(?`"),
            ("(?i-)", "invalid or unsupported Perl syntax: `(?i-)`"),
            ("(?P<n!>a)", "invalid named capture: `(?P<n!>`"),
            ("(?P<>a)", "invalid named capture: `(?P<>`"),
            ("(?P<name", "invalid named capture: `(?P<name`"),
        ] {
            assert_eq!(
                compile_error(pattern).as_deref(),
                Some(format!("error parsing regexp: {want}").as_str()),
                "{pattern}"
            );
        }
    }

    #[test]
    fn valid_patterns_pass() {
        for pattern in [
            "",
            "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            r"^(\d+)(m|Mi|Gi)?$",
            "a{2}",
            "a{2,}",
            "a{,2}",
            "{",
            "a{x}",
            "}]",
            "a*?",
            "a+?b??",
            "(?i)abc",
            "(?i:a)+",
            "(?P<name>a)(?<other>b)",
            "(?s-i:.)",
            "[]a]",
            "[^]a]",
            "[a-]",
            r"[\d\-_.]",
            "[[:alpha:][:^digit:]]",
            r"\pL\p{Greek}\PN\p{^Lu}",
            r"\Q*+?\E",
            r"\x41\x{1F600}\101\0",
            r"\.\-\_\/",
            r"\A\bword\B\z",
            "^*",
            "a|b|",
            "()",
        ] {
            assert_eq!(compile_error(pattern), None, "{pattern}");
        }
    }
}
