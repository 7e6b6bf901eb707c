//! Tests of the label selector grammar, validation and matching, with
//! expected values from upstream behaviour.
#![allow(clippy::type_complexity)]

use super::*;
use serde_json::json;

const QNAME: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn parse_err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Err(ApiError::BadRequest(m)) => m,
        other => panic!("{s:?}: expected BadRequest, got {other:?}"),
    }
}

fn tokens(s: &str) -> Vec<Token> {
    scan(s).into_iter().map(|(t, _)| t).collect()
}

#[test]
fn lexer_single_tokens() {
    use Token::*;
    let cases = [
        ("", EndOfString, ""),
        (",", Comma, ","),
        ("notin", NotIn, "notin"),
        ("in", In, "in"),
        ("=", Equals, "="),
        ("==", DoubleEquals, "=="),
        (">", GreaterThan, ">"),
        ("<", LessThan, "<"),
        ("!", DoesNotExist, "!"),
        ("!=", NotEquals, "!="),
        ("(", OpenPar, "("),
        (")", ClosedPar, ")"),
        ("~", Identifier, "~"),
        ("||", Identifier, "||"),
    ];
    for (s, t, lit) in cases {
        let mut l = Lexer { s: s.as_bytes(), pos: 0 };
        assert_eq!(l.lex(), (t, lit.to_string()), "lexing {s:?}");
    }
}

#[test]
fn lexer_sequences() {
    use Token::*;
    let cases: Vec<(&str, Vec<Token>)> = vec![
        ("key in ( value )", vec![Identifier, In, OpenPar, Identifier, ClosedPar]),
        ("key notin ( value )", vec![Identifier, NotIn, OpenPar, Identifier, ClosedPar]),
        ("key in ( value1, value2 )", vec![Identifier, In, OpenPar, Identifier, Comma, Identifier, ClosedPar]),
        ("key", vec![Identifier]),
        ("!key", vec![DoesNotExist, Identifier]),
        ("()", vec![OpenPar, ClosedPar]),
        ("x in (),y", vec![Identifier, In, OpenPar, ClosedPar, Comma, Identifier]),
        ("== != (), = notin", vec![DoubleEquals, NotEquals, OpenPar, ClosedPar, Comma, Equals, NotIn]),
        ("key>2", vec![Identifier, GreaterThan, Identifier]),
        ("key<1", vec![Identifier, LessThan, Identifier]),
        ("a!==b", vec![Identifier, NotEquals, Equals, Identifier]),
        ("a>=1", vec![Identifier, GreaterThan, Equals, Identifier]),
        ("a\u{0}b", vec![Identifier, Identifier]),
        ("a \u{0} b", vec![Identifier]),
    ];
    for (s, mut want) in cases {
        want.push(EndOfString);
        assert_eq!(tokens(s), want, "lexing {s:?}");
    }
}

#[test]
fn good_strings_render_back_without_spaces() {
    // Upstream TestSelectorParse.
    for s in ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"] {
        let sel = LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        assert_eq!(sel.to_string(), s.replace(' ', ""), "restring of {s:?}");
    }
}

#[test]
fn parse_is_deterministic_and_canonical() {
    let cases = [
        ("x=a,a=x", "a=x,x=a"),
        ("a=x,x=a", "a=x,x=a"),
        ("x in (b,a)", "x in (a,b)"),
        ("x in (a,a,b)", "x in (a,b)"),
        ("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("x,y in (a)", "x,y in (a)"),
        ("x==a", "x==a"),
        ("\rx", "x"),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("a ", "a"),
        ("in=notin", "in=notin"),
        ("in in (in)", "in in (in)"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        ("0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)", "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"),
        ("z,!a,m=1,b!=2", "!a,b!=2,m=1,z"),
        ("k=v,k!=w,k", "k=v,k!=w,k"),
    ];
    for (input, want) in cases {
        let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(sel.to_string(), want, "canonical form of {input:?}");
    }
}

#[test]
fn parse_errors_carry_upstream_messages() {
    let cases: Vec<(&str, String)> = vec![
        ("x=a||y=b", format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {VALUE}")),
        ("x==a==b", "found '==', expected: ',' or 'end of string'".into()),
        ("!x=a", "found '=', expected: ',' or 'end of string'".into()),
        ("x<a", "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ("x>", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
        ("x>-1", format!("unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE}")),
        ("x,,y", "found ',', expected: identifier after ','".into()),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'".into()),
        ("x nott in (y)", "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("a in (xyz),", "found '', expected: identifier after ','".into()),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'".into()),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'".into()),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier".into()),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("(", "found '(', expected: !, identifier, or 'end of string'".into()),
        ("!", "unable to parse requirement: found '', expected: identifier".into()),
        ("a!b", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
        ("x=a b", "found 'b', expected: ',' or 'end of string'".into()),
        ("x=(a)", "unable to parse requirement: found '(', expected: identifier".into()),
        ("x in a", "unable to parse requirement: found 'a' expected: '('".into()),
        ("y notin", "unable to parse requirement: found '' expected: '('".into()),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier".into()),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
        ("-ltier=postgres", format!("unable to parse requirement: <nil>: Invalid value: \"-ltier\": {QNAME}")),
        ("component+kube-apiserver,tier", format!("unable to parse requirement: <nil>: Invalid value: \"component+kube-apiserver\": {QNAME}")),
        (
            "x in (a b)",
            "unable to parse requirement: found 'b', expected: ',' or ')'".into(),
        ),
        (
            "k in (-a,-b)",
            format!("unable to parse requirement: [values[0][k]: Invalid value: \"-a\": {VALUE}, values[1][k]: Invalid value: \"-b\": {VALUE}]"),
        ),
        (
            "Ab/c=d",
            "unable to parse requirement: <nil>: Invalid value: \"Ab/c\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse_err(input), want, "error for {input:?}");
    }
    let long_key = "a".repeat(64);
    assert_eq!(
        parse_err(&long_key),
        format!("unable to parse requirement: <nil>: Invalid value: \"{long_key}\": name part must be no more than 63 characters")
    );
    let long_value = format!("k={}", "v".repeat(64));
    assert_eq!(
        parse_err(&long_value),
        format!(
            "unable to parse requirement: values[0][k]: Invalid value: \"{}\": must be no more than 63 characters",
            "v".repeat(64)
        )
    );
    let e = LabelSelector::parse("(").unwrap_err();
    assert_eq!(e.code(), 400);
    assert_eq!(e.reason(), "BadRequest");
}

#[test]
fn matching_follows_upstream() {
    // Upstream TestSelectorMatches and TestRequirementSelectorMatching.
    let cases: Vec<(&str, Vec<(&str, &str)>, bool)> = vec![
        ("", vec![("x", "y")], true),
        ("x=y", vec![("x", "y")], true),
        ("x=y,z=w", vec![("x", "y"), ("z", "w")], true),
        ("x!=y,z!=w", vec![("x", "z"), ("z", "a")], true),
        ("notin=in", vec![("notin", "in")], true),
        ("x", vec![("x", "z")], true),
        ("!x", vec![("y", "z")], true),
        ("x>1", vec![("x", "2")], true),
        ("x<1", vec![("x", "0")], true),
        ("x=z", vec![], false),
        ("x=y", vec![("x", "z")], false),
        ("x=y,z=w", vec![("x", "w"), ("z", "w")], false),
        ("x!=y,z!=w", vec![("x", "z"), ("z", "w")], false),
        ("x", vec![("y", "z")], false),
        ("!x", vec![("x", "z")], false),
        ("x>1", vec![("x", "0")], false),
        ("x<1", vec![("x", "2")], false),
        ("foo=bar", vec![("foo", "bar"), ("baz", "blah")], true),
        ("foo=bar,baz=blah", vec![("foo", "bar"), ("baz", "blah")], true),
        ("foo=blah", vec![("foo", "bar"), ("baz", "blah")], false),
        ("foo=bar,foobar=bar,baz=blah", vec![("foo", "bar"), ("baz", "blah")], false),
        ("x in (foo),y notin (alpha)", vec![("x", "foo"), ("y", "baz")], true),
        ("x in (foo),y in (alpha)", vec![("x", "foo"), ("y", "baz")], false),
        ("x notin (),y", vec![("y", "")], true),
        ("!x,y", vec![("y", "")], true),
        ("x notin (),!y", vec![("y", "")], false),
        ("x in ()", vec![("y", "baz")], false),
        ("x in ()", vec![("x", "")], true),
        ("z>1", vec![("z", "2")], true),
        ("z>1", vec![("z", "v2")], false),
        ("z>1", vec![], false),
        ("z<10", vec![("z", "-5")], true),
        ("z<10", vec![("z", "+5")], true),
        ("z>1", vec![("z", "99999999999999999999")], false),
        ("x!=y", vec![], true),
        ("x notin (a,b)", vec![], true),
        ("x notin (a,b)", vec![("x", "b")], false),
        ("x=", vec![("x", "")], true),
        ("x=", vec![], false),
        ("x!=", vec![], true),
        ("x==y", vec![("x", "y")], true),
        ("app in (web,api),tier", vec![("app", "api"), ("tier", "fe")], true),
    ];
    for (sel, labels, want) in cases {
        let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
        assert_eq!(s.matches(&set(&labels)), want, "{sel:?} against {labels:?}");
    }
}

#[test]
fn labels_can_come_from_json_without_copying() {
    let obj = json!({"metadata": {"name": "p", "labels": {"app": "web", "n": 3}}});
    let s = LabelSelector::parse("app=web").unwrap();
    assert!(s.matches_object(&obj));
    assert!(s.matches(&ObjectLabels(&obj)));
    assert!(s.matches(&obj["metadata"]["labels"]));
    assert!(s.matches(obj["metadata"]["labels"].as_object().unwrap()));
    assert!(!s.matches(&obj), "a whole object is not a labels map");
    // Non-string label values count as absent.
    assert!(LabelSelector::parse("!n").unwrap().matches_object(&obj));
    assert!(LabelSelector::parse("app").unwrap().matches_object(&obj));
    assert!(!LabelSelector::parse("app").unwrap().matches_object(&json!({"metadata": {}})));
    let mut hm: HashMap<&str, &str> = HashMap::new();
    hm.insert("app", "web");
    assert!(s.matches(&hm));
    let bt: BTreeMap<&str, String> = [("app", "web".to_string())].into_iter().collect();
    assert!(s.matches(&bt));
}

#[test]
fn everything_nothing_and_empty() {
    let all = LabelSelector::everything();
    assert!(all.is_empty());
    assert!(!all.matches_nothing());
    assert!(all.matches(&set(&[("x", "y")])));
    assert!(all.matches(&set(&[])));
    assert_eq!(all.to_string(), "");
    assert_eq!(LabelSelector::parse("").unwrap(), all);
    assert_eq!(LabelSelector::parse("  \t").unwrap(), all);
    assert_eq!(LabelSelector::default(), all);
    let none = LabelSelector::nothing();
    assert!(!none.is_empty());
    assert!(none.matches_nothing());
    assert!(!none.matches(&set(&[("x", "y")])));
    assert!(!none.matches(&set(&[])));
    assert_eq!(none.to_string(), "");
    assert!(!LabelSelector::parse("x").unwrap().is_empty());
}

#[test]
fn requirements_are_exposed() {
    let s = LabelSelector::parse("b in (y,x),a!=1").unwrap();
    let r = s.requirements();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].key(), r[0].operator(), r[0].values()), ("a", Operator::NotEquals, &["1".to_string()][..]));
    assert_eq!((r[1].key(), r[1].operator()), ("b", Operator::In));
    assert_eq!(r[1].values(), &["x".to_string(), "y".to_string()]);
    assert_eq!(r[1].to_string(), "b in (x,y)");
    assert_eq!(Operator::GreaterThan.as_str(), "gt");
    assert_eq!(Operator::DoesNotExist.as_str(), "!");
}

#[test]
fn requires_exact_match() {
    let cases: Vec<(&str, &str, Option<&str>)> = vec![
        ("", "test", None),
        ("a=b", "test", None),
        ("test=b", "test", Some("b")),
        ("test==b", "test", Some("b")),
        ("test in (b)", "test", Some("b")),
        ("test in (b,c)", "test", None),
        ("test!=b", "test", None),
        ("test=", "test", Some("")),
        ("test", "test", None),
    ];
    for (sel, key, want) in cases {
        assert_eq!(LabelSelector::parse(sel).unwrap().requires_exact_match(key), want, "{sel:?}");
    }
}

#[test]
fn requirement_constructor_errors() {
    // Upstream TestRequirementConstructor, with the full messages.
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let cases: Vec<(&str, Operator, Vec<String>, Option<String>)> = vec![
        ("x1", Operator::In, s(&[]), Some("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty".into())),
        ("x2", Operator::NotIn, s(&[]), Some("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty".into())),
        ("x3", Operator::In, s(&["foo"]), None),
        ("x4", Operator::NotIn, s(&["foo"]), None),
        ("x5", Operator::Equals, s(&["bar", "foo"]), Some("values: Invalid value: []string{\"bar\", \"foo\"}: exact-match compatibility requires one single value".into())),
        ("x6", Operator::Exists, s(&[]), None),
        ("x7", Operator::DoesNotExist, s(&[]), None),
        ("x8", Operator::Exists, s(&["foo"]), Some("values: Invalid value: []string{\"foo\"}: values set must be empty for exists and does not exist".into())),
        ("x11", Operator::GreaterThan, s(&["1"]), None),
        ("x12", Operator::LessThan, s(&["6"]), None),
        ("x13", Operator::GreaterThan, s(&[]), Some("values: Invalid value: []string{}: for 'Gt', 'Lt' operators, exactly one value is required".into())),
        ("x14", Operator::GreaterThan, s(&["bar"]), Some("values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer".into())),
        ("x15", Operator::LessThan, s(&["bar"]), Some("values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer".into())),
        ("x17", Operator::Equals, s(&["a b"]), Some(format!("values[0][x17]: Invalid value: \"a b\": {VALUE}"))),
    ];
    for (key, op, vals, want) in cases {
        let got = Requirement::new(key, op, vals).err();
        assert_eq!(got, want, "requirement {key}");
    }
    let long = "a".repeat(254);
    let e = Requirement::new(&long, Operator::Exists, vec![]).unwrap_err();
    assert!(
        e.starts_with(&format!("key: Invalid value: \"{long}\": name part must be no more than 63 characters")),
        "{e}"
    );
    let e = Requirement::new("x16", Operator::Equals, vec!["a".repeat(254)]).unwrap_err();
    assert_eq!(
        e,
        format!("values[0][x16]: Invalid value: \"{}\": must be no more than 63 characters", "a".repeat(254))
    );
}

#[test]
fn structured_selectors() {
    let ok: Vec<(Value, &str, bool)> = vec![
        (json!({}), "", true),
        (json!({"matchLabels": {}}), "", true),
        (json!({"matchLabels": null, "matchExpressions": []}), "", true),
        (json!({"matchLabels": {"app": "web"}}), "app=web", false),
        (
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]}),
            "app=web,tier in (be,fe)",
            false,
        ),
        (
            json!({"matchExpressions": [
                {"key": "z", "operator": "DoesNotExist"},
                {"key": "a", "operator": "Exists", "values": []},
                {"key": "m", "operator": "NotIn", "values": ["x"]}]}),
            "a,m notin (x),!z",
            false,
        ),
        (
            json!({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}),
            "a=1,a in (1,2)",
            false,
        ),
    ];
    for (v, want, empty) in ok {
        let s = LabelSelector::from_label_selector_json(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(s.to_string(), want, "{v}");
        assert_eq!(s.is_empty(), empty, "{v}");
    }
    let null = LabelSelector::from_label_selector_json(&Value::Null).unwrap();
    assert!(null.matches_nothing());
    assert!(!null.matches(&set(&[])));

    let s = LabelSelector::from_label_selector_json(
        &json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
    )
    .unwrap();
    assert!(s.matches(&set(&[("app", "web")])));
    assert!(s.matches(&set(&[("app", "web"), ("env", "dev")])));
    assert!(!s.matches(&set(&[("app", "web"), ("env", "prod")])));
    assert!(!s.matches(&set(&[("env", "dev")])));

    let bad: Vec<(Value, String)> = vec![
        (
            json!({"matchExpressions": [{"key": "x", "operator": "In"}]}),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".into(),
        ),
        (
            json!({"matchExpressions": [{"key": "x", "operator": "Exists", "values": ["a"]}]}),
            "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist".into(),
        ),
        (
            json!({"matchExpressions": [{"key": "x", "operator": "Gt", "values": ["1"]}]}),
            "\"Gt\" is not a valid label selector operator".into(),
        ),
        (json!({"matchExpressions": [{"key": "x"}]}), "\"\" is not a valid label selector operator".into()),
        (json!({"matchLabels": {"bad key": "v"}}), format!("key: Invalid value: \"bad key\": {QNAME}")),
        (json!({"matchLabels": {"app": "-x"}}), format!("values[0][app]: Invalid value: \"-x\": {VALUE}")),
        (
            json!({"matchLabels": {"bad key": "-x"}}),
            format!("[key: Invalid value: \"bad key\": {QNAME}, values[0][bad key]: Invalid value: \"-x\": {VALUE}]"),
        ),
        (json!("app=web"), "a label selector must be an object or null".into()),
        (json!({"matchLabels": {"a": 1}}), "matchLabels[a] must be a string".into()),
    ];
    for (v, want) in bad {
        assert_eq!(LabelSelector::from_label_selector_json(&v).unwrap_err(), want, "{v}");
    }
}

#[test]
fn from_set_and_from_str() {
    let s = LabelSelector::from_set([("b", "2"), ("a", "1")]);
    assert_eq!(s.to_string(), "a=1,b=2");
    assert!(s.matches(&set(&[("a", "1"), ("b", "2"), ("c", "3")])));
    assert!(LabelSelector::from_set(std::iter::empty()).is_empty());
    let p: LabelSelector = "a=1".parse().unwrap();
    assert_eq!(p.to_string(), "a=1");
}
