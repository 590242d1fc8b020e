//! A JSON settings file as `init --agent` edits it: objects (their keys in the file's order)
//! and arrays as a tree, every other value kept as the text the file holds. So a number
//! comes back exactly as it was written (`12345678901234567890123`, `1e400`, `1.0`), which
//! `serde_json::Value` cannot promise without the crate-wide `arbitrary_precision` feature
//! (that feature changes serde's messages about numbers everywhere else, the MCP server's
//! answers included).

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// One JSON value of a settings file.
#[derive(Debug, Clone)]
pub(crate) enum Json {
    /// An object, its keys in the file's order.
    Object(Vec<(String, Json)>),
    /// An array.
    Array(Vec<Json>),
    /// A string, number, boolean or null, as the file spells it.
    Scalar(Box<RawValue>),
    /// A string, number, boolean or null git-loaf adds.
    Added(Value),
}

impl Json {
    /// The document `text` holds.
    pub fn parse(text: &str) -> serde_json::Result<Json> {
        serde_json::from_str(text)
    }

    /// The document as pretty JSON (two spaces), ending with a newline.
    pub fn to_pretty(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self).map(|text| text + "\n")
    }

    /// The value as a `serde_json::Value`, to look at (numbers may lose digits: never
    /// written back).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(key, value)| (key.clone(), value.to_value()))
                    .collect(),
            ),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Scalar(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            Json::Added(value) => value.clone(),
        }
    }

    /// The value under `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Sets `key` of an object (added last when new).
    pub fn insert(&mut self, key: &str, value: Json) {
        if let Json::Object(entries) = self {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some((_, old)) => *old = value,
                None => entries.push((key.to_owned(), value)),
            }
        }
    }

    /// The object under `key`, made when missing; an error when it is something else.
    pub fn object(&mut self, key: &str) -> Result<&mut Json, String> {
        match self.slot(key, || Json::Object(Vec::new())) {
            Some(value @ Json::Object(_)) => Ok(value),
            _ => Err(format!("has `{key}` that is not an object")),
        }
    }

    /// The array under `key`, made when missing; an error when it is something else.
    pub fn array(&mut self, key: &str) -> Result<&mut Vec<Json>, String> {
        match self.slot(key, || Json::Array(Vec::new())) {
            Some(Json::Array(items)) => Ok(items),
            _ => Err(format!("has `{key}` that is not a list")),
        }
    }

    /// The value under `key` of an object, `empty()` put there when missing.
    fn slot(&mut self, key: &str, empty: impl FnOnce() -> Json) -> Option<&mut Json> {
        let Json::Object(entries) = self else {
            return None;
        };
        let at = match entries.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                entries.push((key.to_owned(), empty()));
                entries.len() - 1
            }
        };
        entries.get_mut(at).map(|(_, value)| value)
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Json {
        match value {
            Value::Object(map) => {
                Json::Object(map.into_iter().map(|(k, v)| (k, v.into())).collect())
            }
            Value::Array(items) => Json::Array(items.into_iter().map(Json::from).collect()),
            scalar => Json::Added(scalar),
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Scalar(raw) => raw.serialize(serializer),
            Json::Added(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        // Read as raw text first, so that a scalar keeps its spelling; objects and arrays
        // are then read again, entry by entry.
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        let text = raw.get();
        let parsed = match text.trim_start().as_bytes().first() {
            Some(b'{') => serde_json::Deserializer::from_str(text).deserialize_map(JsonVisitor),
            Some(b'[') => serde_json::Deserializer::from_str(text).deserialize_seq(JsonVisitor),
            _ => return Ok(Json::Scalar(raw)),
        };
        parsed.map_err(serde::de::Error::custom)
    }
}

/// Reads an object or an array into [`Json`].
struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object or array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Json>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_key_order_come_back_as_written() {
        let text = r#"{"z": 12345678901234567890123, "a": [1.0, 1e400, -0, 0.1000000000000000055511151231257827], "s": "\u00e9\n", "n": null, "t": true}"#;
        let doc = Json::parse(text).expect("JSON");
        assert_eq!(
            serde_json::to_string(&doc).expect("serializes"),
            r#"{"z":12345678901234567890123,"a":[1.0,1e400,-0,0.1000000000000000055511151231257827],"s":"\u00e9\n","n":null,"t":true}"#
        );
    }

    #[test]
    fn objects_and_arrays_are_made_when_missing_and_refused_when_of_another_kind() {
        let mut doc = Json::parse(r#"{"hooks": {"Stop": []}, "list": [], "n": 5}"#).expect("JSON");
        let hooks = doc.object("hooks").expect("an object");
        hooks
            .array("Stop")
            .expect("a list")
            .push(Value::from("x").into());
        hooks
            .array("New")
            .expect("made")
            .push(Value::from(1).into());
        assert!(doc.object("list").is_err());
        assert!(doc.array("n").is_err());
        doc.insert("n", Value::from(6).into());
        assert_eq!(
            serde_json::to_string(&doc).expect("serializes"),
            r#"{"hooks":{"Stop":["x"],"New":[1]},"list":[],"n":6}"#
        );
        assert_eq!(
            doc.get("hooks").map(Json::to_value),
            Some(serde_json::json!({"Stop": ["x"], "New": [1]}))
        );
    }

    #[test]
    fn what_is_not_json_is_an_error() {
        assert!(Json::parse("{\"a\": 1,}").is_err());
        assert!(Json::parse("model = 1").is_err());
    }
}
