//! Detection of keys that appear twice in one JSON object (upstream's
//! strict decoder reports them as `duplicate field "<path>"`; a plain
//! decode silently keeps the last one).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The paths (`metadata.name`, `spec.containers[0].image`) of every key
/// that repeats within its JSON object, in document order. Malformed JSON
/// yields the error serde_json reports.
pub fn duplicate_fields(json: &[u8]) -> Result<Vec<String>, serde_json::Error> {
    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(json);
    Walk { path: String::new(), found: &found }.deserialize(&mut de)?;
    de.end()?;
    Ok(found.into_inner())
}

struct Walk<'a> {
    path: String,
    found: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        while seq.next_element_seed(Walk { path: format!("{}[{index}]", self.path), found: self.found })?.is_some() {
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Walk { path, found: self.found })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_found_at_every_depth() {
        let json = br#"{"a":1,"a":2,"spec":{"c":[{"x":1,"x":2}],"r":1,"r":2}}"#;
        assert_eq!(duplicate_fields(json).unwrap(), vec!["a", "spec.c[0].x", "spec.r"]);
    }

    #[test]
    fn distinct_keys_are_fine_and_bad_json_is_an_error() {
        assert!(duplicate_fields(br#"{"a":{"a":1}}"#).unwrap().is_empty());
        assert!(duplicate_fields(b"{").is_err());
    }
}
