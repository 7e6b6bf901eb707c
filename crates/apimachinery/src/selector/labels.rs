//! Label selectors, following upstream's `k8s.io/apimachinery/pkg/labels`
//! (`selector.go`, v0.33) and `metav1.LabelSelectorAsSelector`.
//!
//! String grammar ([`LabelSelector::parse`], upstream `labels.Parse`):
//!
//! ```text
//! <selector>    ::= <requirement> | <requirement> "," <selector>
//! <requirement> ::= [!] KEY [ <set-based> | <exact> | <numeric> ]
//! <set-based>   ::= ("in" | "notin") "(" VALUE { "," VALUE } ")"
//! <exact>       ::= ("=" | "==" | "!=") VALUE
//! <numeric>     ::= (">" | "<") INTEGER
//! ```
//!
//! Comma is AND; whitespace (space, tab, CR, LF) separates tokens; a bare
//! `key` means "exists", `!key` "does not exist"; values may be empty
//! (`x=`, `x in ()`, `x in (a,)`); `in`/`notin` are also valid keys and
//! values. Keys are qualified names (optional DNS-subdomain prefix and `/`,
//! name ≤ 63), values are label values (≤ 63, alphanumeric at both ends,
//! `-_.` inside, or empty). Requirements are kept sorted by key, set values
//! sorted and de-duplicated, and [`Display`](std::fmt::Display) renders the
//! canonical form (`x in (a,b),y!=c,!z`).
//!
//! Matching: `=`/`==`/`in` need the label present with one of the values;
//! `!=`/`notin` also match when the label is absent; `>`/`<` parse the
//! label as a 64-bit integer (no match when absent or not a number).
//!
//! Parse errors are `400 BadRequest` with upstream's text, e.g.
//! `unable to parse requirement: <nil>: Invalid value: "-x": name part must
//! consist of …` or `found ',', expected: !, identifier, or 'end of string'`.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::{BuildHasher, Hash};

use serde_json::{Map, Value};

use crate::errors::ApiError;
use crate::validation::field::{go_quote, go_string_slice, BadValue, ErrorList, FieldError, Path};
use crate::validation::names::{is_qualified_name, is_valid_label_value};

/// A requirement's operator (upstream `selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `k in (a,b)` — also `matchExpressions` `In`.
    In,
    /// `k notin (a,b)` — also `NotIn`.
    NotIn,
    /// `k=v` — also `matchLabels`.
    Equals,
    /// `k==v` (kept distinct so it renders back as `==`).
    DoubleEquals,
    /// `k!=v`.
    NotEquals,
    /// `k` — also `Exists`.
    Exists,
    /// `!k` — also `DoesNotExist`.
    DoesNotExist,
    /// `k>n`.
    GreaterThan,
    /// `k<n`.
    LessThan,
}

impl Operator {
    /// Upstream's operator string (`in`, `notin`, `=`, `==`, `!=`, `exists`,
    /// `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// `strings.Join(binaryOperators, ", ")`.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// Anything labels can be looked up in, without copying: a
/// `BTreeMap`/`HashMap` of strings, a JSON labels object
/// (`serde_json::Map` or a `Value` that *is* the labels object), or a whole
/// object through [`ObjectLabels`].
pub trait LabelSource {
    /// The value of label `key`, if set.
    fn label(&self, key: &str) -> Option<&str>;
}

impl<K: Borrow<str> + Ord, V: AsRef<str>> LabelSource for BTreeMap<K, V> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(AsRef::as_ref)
    }
}

impl<K: Borrow<str> + Hash + Eq, V: AsRef<str>, S: BuildHasher> LabelSource for HashMap<K, V, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(AsRef::as_ref)
    }
}

impl LabelSource for Map<String, Value> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// A `Value` is read as the labels object itself (`metadata.labels`);
/// anything but an object has no labels. Use [`ObjectLabels`] for a whole
/// object.
impl LabelSource for Value {
    fn label(&self, key: &str) -> Option<&str> {
        self.as_object().and_then(|m| m.label(key))
    }
}

/// The labels of a whole JSON object, read from `metadata.labels`.
#[derive(Clone, Copy, Debug)]
pub struct ObjectLabels<'a>(pub &'a Value);

impl LabelSource for ObjectLabels<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.0.get("metadata").and_then(|m| m.get("labels")).and_then(|l| l.get(key)).and_then(Value::as_str)
    }
}

/// One requirement of a selector: key, operator and values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

fn validate_label_key(key: &str, path: &Path) -> Option<FieldError> {
    let errs = is_qualified_name(key);
    if errs.is_empty() {
        None
    } else {
        Some(FieldError::invalid(path, key, &errs.join("; ")))
    }
}

/// `labels.NewRequirement` with a path; `nil_values` renders an empty value
/// list as Go's `[]string(nil)` (as `LabelSelectorAsSelector` passes it).
fn new_requirement(
    key: &str,
    op: Operator,
    values: Vec<String>,
    path: &Path,
    nil_values: bool,
) -> Result<Requirement, ErrorList> {
    let mut errs = ErrorList::new();
    if let Some(e) = validate_label_key(key, &path.child("key")) {
        errs.push(e);
    }
    let vp = path.child("values");
    let all = || BadValue::Raw(go_string_slice(&values, nil_values));
    match op {
        Operator::In | Operator::NotIn => {
            if values.is_empty() {
                errs.push(FieldError::invalid(&vp, all(), "for 'in', 'notin' operators, values set can't be empty"));
            }
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
            if values.len() != 1 {
                errs.push(FieldError::invalid(&vp, all(), "exact-match compatibility requires one single value"));
            }
        }
        Operator::Exists | Operator::DoesNotExist => {
            if !values.is_empty() {
                errs.push(FieldError::invalid(&vp, all(), "values set must be empty for exists and does not exist"));
            }
        }
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                errs.push(FieldError::invalid(&vp, all(), "for 'Gt', 'Lt' operators, exactly one value is required"));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(FieldError::invalid(
                        &vp.index(i),
                        v.as_str(),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let msgs = is_valid_label_value(v);
        if !msgs.is_empty() {
            errs.push(FieldError::invalid(&vp.index(i).key(key), v.as_str(), &msgs.join("; ")));
        }
    }
    if errs.is_empty() {
        Ok(Requirement { key: key.to_string(), operator: op, values })
    } else {
        Err(errs)
    }
}

impl Requirement {
    /// `labels.NewRequirement`: validates the key, the value count for the
    /// operator, integer values for `>`/`<` and every value's format. The
    /// error is upstream's aggregated message (`values: Invalid value:
    /// []string{}: for 'in', 'notin' operators, values set can't be empty`).
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
        new_requirement(key, operator, values, &Path::nil(), false)
            .map_err(|e| e.aggregate_message().unwrap_or_default())
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values (sorted for parsed set requirements; as given otherwise).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether the labels satisfy this requirement (`Requirement.Matches`).
    pub fn matches<L: LabelSource + ?Sized>(&self, labels: &L) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                labels.label(&self.key).is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => labels.label(&self.key).is_none_or(|v| !self.has_value(v)),
            Operator::Exists => labels.label(&self.key).is_some(),
            Operator::DoesNotExist => labels.label(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(v) = labels.label(&self.key) else { return false };
                let Ok(have) = v.parse::<i64>() else { return false };
                if self.values.len() != 1 {
                    return false;
                }
                let Ok(want) = self.values[0].parse::<i64>() else { return false };
                (self.operator == Operator::GreaterThan && have > want)
                    || (self.operator == Operator::LessThan && have < want)
            }
        }
    }
}

impl fmt::Display for Requirement {
    /// `Requirement.String()`: `!k`, `k`, `k=v`, `k==v`, `k!=v`,
    /// `k in (a,b)`, `k notin (a,b)`, `k>1`, `k<1`; set values sorted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        if self.values.len() == 1 {
            f.write_str(&self.values[0])?;
        } else {
            let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            f.write_str(&sorted.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: the AND of its requirements, or the selector that
/// matches nothing (a null `metav1.LabelSelector`).
///
/// * [`LabelSelector::everything`] (also `parse("")`, an empty
///   `metav1.LabelSelector`) matches every object and [`is_empty`](Self::is_empty);
/// * [`LabelSelector::nothing`] (a null `metav1.LabelSelector`) matches no
///   object, is not empty, and renders as `""`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSelector {
    /// `None` = nothing.
    requirements: Option<Vec<Requirement>>,
}

impl Default for LabelSelector {
    fn default() -> Self {
        LabelSelector::everything()
    }
}

impl LabelSelector {
    /// Parses the string form (the `labelSelector` query parameter) as
    /// upstream's `labels.Parse`. Errors are `ApiError::BadRequest` with the
    /// message the API server returns.
    pub fn parse(s: &str) -> Result<LabelSelector, ApiError> {
        let mut p = Parser { items: scan(s), pos: 0 };
        let mut reqs = p.parse().map_err(ApiError::BadRequest)?;
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements: Some(reqs) })
    }

    /// The selector that matches everything (`labels.Everything()`).
    pub fn everything() -> LabelSelector {
        LabelSelector { requirements: Some(Vec::new()) }
    }

    /// The selector that matches nothing (`labels.Nothing()`).
    pub fn nothing() -> LabelSelector {
        LabelSelector { requirements: None }
    }

    /// A selector requiring exactly these labels (`SelectorFromSet`, e.g. a
    /// ReplicationController's or Service's `spec.selector`); not validated;
    /// empty = everything.
    pub fn from_set<'a, I>(set: I) -> LabelSelector
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut reqs: Vec<Requirement> = set
            .into_iter()
            .map(|(k, v)| Requirement { key: k.to_string(), operator: Operator::Equals, values: vec![v.to_string()] })
            .collect();
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements: Some(reqs) }
    }

    /// Converts a `metav1.LabelSelector` JSON object as upstream's
    /// `LabelSelectorAsSelector`: `null` → [`nothing`](Self::nothing); no
    /// matchLabels and no matchExpressions → [`everything`](Self::everything);
    /// otherwise matchLabels become `=` requirements and matchExpressions
    /// `In`/`NotIn`/`Exists`/`DoesNotExist` requirements, each validated as
    /// `NewRequirement` does. Errors carry upstream's text (`"Gt" is not a
    /// valid label selector operator`, `values: Invalid value:
    /// []string(nil): for 'in', 'notin' operators, values set can't be
    /// empty`, …).
    pub fn from_label_selector_json(v: &Value) -> Result<LabelSelector, String> {
        let m = match v {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(m) => m,
            _ => return Err("a label selector must be an object or null".to_string()),
        };
        let mut labels: Vec<(&str, &str)> = Vec::new();
        match m.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(ml)) => {
                for (k, val) in ml {
                    let s = val.as_str().ok_or_else(|| format!("matchLabels[{k}] must be a string"))?;
                    labels.push((k.as_str(), s));
                }
            }
            Some(_) => return Err("matchLabels must be an object".to_string()),
        }
        labels.sort();
        let exprs: &[Value] = match m.get("matchExpressions") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(_) => return Err("matchExpressions must be a list".to_string()),
        };
        if labels.is_empty() && exprs.is_empty() {
            return Ok(LabelSelector::everything());
        }
        let agg = |e: ErrorList| e.aggregate_message().unwrap_or_default();
        let mut reqs = Vec::with_capacity(labels.len() + exprs.len());
        for (k, val) in labels {
            reqs.push(new_requirement(k, Operator::Equals, vec![val.to_string()], &Path::nil(), true).map_err(agg)?);
        }
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let op_s = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let op = match op_s {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(format!("{} is not a valid label selector operator", go_quote(other))),
            };
            let values: Vec<String> = match e.get("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|x| x.as_str().map(str::to_string).ok_or("values must be strings".to_string()))
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("values must be a list".to_string()),
            };
            reqs.push(new_requirement(key, op, values, &Path::nil(), true).map_err(agg)?);
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements: Some(reqs) })
    }

    /// Whether the selector does not restrict anything (everything). The
    /// nothing-selector is not empty.
    pub fn is_empty(&self) -> bool {
        self.requirements.as_ref().is_some_and(Vec::is_empty)
    }

    /// Whether this is the nothing-selector (`labels.MatchesNothing`).
    pub fn matches_nothing(&self) -> bool {
        self.requirements.is_none()
    }

    /// The requirements, sorted by key (empty for everything and nothing).
    pub fn requirements(&self) -> &[Requirement] {
        self.requirements.as_deref().unwrap_or(&[])
    }

    /// Whether the labels satisfy every requirement.
    pub fn matches<L: LabelSource + ?Sized>(&self, labels: &L) -> bool {
        match &self.requirements {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    /// Whether a whole JSON object's `metadata.labels` satisfy the selector.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.matches(&ObjectLabels(obj))
    }

    /// `RequiresExactMatch`: the single value the first requirement on
    /// `key` demands (`=`, `==`, or `in` with one value), if any.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        let r = self.requirements().iter().find(|r| r.key == key)?;
        match r.operator {
            Operator::Equals | Operator::DoubleEquals | Operator::In if r.values.len() == 1 => Some(&r.values[0]),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical string (`String()`): requirements sorted by key and
    /// joined by `,`; `""` for everything and nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = ApiError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabelSelector::parse(s)
    }
}

// ---- lexer and parser (upstream's, token for token) ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn literal_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    /// The next byte, 0 at the end (a NUL byte also reads as 0, as upstream).
    fn read(&mut self) -> u8 {
        if self.pos < self.s.len() {
            let b = self.s[self.pos];
            self.pos += 1;
            b
        } else {
            0
        }
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buf = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            } else if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
        }
        let lit = String::from_utf8_lossy(&buf).into_owned();
        match literal_token(&buf) {
            Some(t) => (t, lit),
            None => (Token::Identifier, lit),
        }
    }

    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut last: Option<(Token, String)> = None;
        let mut buf = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            } else if is_special(ch) {
                buf.push(ch);
                if let Some(t) = literal_token(&buf) {
                    last = Some((t, String::from_utf8_lossy(&buf).into_owned()));
                } else if last.is_some() {
                    self.unread();
                    break;
                }
            } else {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| {
            (Token::Error, format!("error expected: keyword found '{}'", String::from_utf8_lossy(&buf)))
        })
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(ch) {
            self.scan_special_symbol()
        } else {
            self.scan_id_or_keyword()
        }
    }
}

fn scan(s: &str) -> Vec<(Token, String)> {
    let mut l = Lexer { s: s.as_bytes(), pos: 0 };
    let mut items = Vec::new();
    loop {
        let (t, lit) = l.lex();
        items.push((t, lit));
        if t == Token::EndOfString {
            return items;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

impl Parser {
    fn at(&self, i: usize) -> (Token, &str) {
        let (t, l) = &self.items[i.min(self.items.len() - 1)];
        (*t, l)
    }

    fn map(t: Token, ctx: Context) -> Token {
        if ctx == Context::Values && matches!(t, Token::In | Token::NotIn) {
            Token::Identifier
        } else {
            t
        }
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        let (t, l) = self.at(self.pos);
        (Self::map(t, ctx), l.to_string())
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let (t, l) = self.at(self.pos);
        let out = (Self::map(t, ctx), l.to_string());
        self.pos += 1;
        out
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!("found '{l2}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(reqs),
                _ => return Err(format!("found '{lit}', expected: !, identifier, or 'end of string'")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        let to_msg = |e: ErrorList| e.aggregate_message().unwrap_or_default();
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = op {
            return new_requirement(&key, op, Vec::new(), &Path::nil(), false).map_err(to_msg);
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(&key, op, values.into_iter().collect(), &Path::nil(), false).map_err(to_msg)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        if let Some(e) = validate_label_key(&lit, &Path::nil()) {
            return Err(e.to_string());
        }
        let (t, _) = self.lookahead(Context::Values);
        if (t == Token::EndOfString || t == Token::Comma) && op != Some(Operator::DoesNotExist) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                let (t, _) = self.consume(Context::Values);
                if t != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut s = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    s.insert(lit);
                    let (t2, l2) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(s),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if s.is_empty() {
                        s.insert(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Token::ClosedPar {
                        s.insert(String::new());
                        return Ok(s);
                    }
                    if t2 == Token::Comma {
                        s.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

#[cfg(test)]
mod tests;
