//! A block's properties: keys in first-seen order, with the quirks of the JavaScript object
//! the reference stores them in.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::js::JsString;

/// The names every JavaScript object inherits. The reference tests `key in properties`, so
/// these count as already present: assigning one is a `DUPLICATE_KEY`, and `__proto__` is
/// never stored at all (assigning a string to it is ignored).
const INHERITED_NAMES: [&str; 12] = [
    "constructor",
    "__defineGetter__",
    "__defineSetter__",
    "hasOwnProperty",
    "__lookupGetter__",
    "__lookupSetter__",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toString",
    "valueOf",
    "__proto__",
    "toLocaleString",
];

/// Above this many keys, lookups go through a hash index so that a hostile block with a
/// million keys stays linear.
const INDEX_FROM: usize = 16;

/// Ordered key/value properties of a block.
#[derive(Debug, Clone, Default)]
pub struct Properties<'a> {
    entries: Vec<(Cow<'a, str>, JsString<'a>)>,
    index: HashMap<Cow<'a, str>, usize>,
}

impl PartialEq for Properties<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl Eq for Properties<'_> {}

impl<'a> Properties<'a> {
    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.position(key).map(|i| &*self.entries[i].1.text)
    }

    /// Keys and values in first-seen order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (&**k, &*v.text))
    }

    /// Keys and values as JavaScript holds them, in first-seen order.
    pub(crate) fn raw_entries(&self) -> impl Iterator<Item = (&str, &JsString<'a>)> {
        self.entries.iter().map(|(k, v)| (&**k, v))
    }

    /// Keys in first-seen order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| &**k)
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The same properties, owning their text.
    pub fn into_owned(self) -> Properties<'static> {
        let mut owned = Properties::default();
        for (key, value) in self.entries {
            owned.js_assign(Cow::Owned(key.into_owned()), value.into_owned());
        }
        owned
    }

    fn position(&self, key: &str) -> Option<usize> {
        if self.entries.len() > INDEX_FROM {
            self.index.get(key).copied()
        } else {
            self.entries.iter().position(|(k, _)| k == key)
        }
    }

    /// JavaScript's `key in properties`: set here, or inherited by every object.
    pub(crate) fn js_has(&self, key: &str) -> bool {
        self.position(key).is_some() || INHERITED_NAMES.contains(&key)
    }

    /// JavaScript's `properties[key] = value`: replaces in place, appends otherwise, and
    /// ignores `__proto__`.
    pub(crate) fn js_assign(&mut self, key: Cow<'a, str>, value: JsString<'a>) {
        if key == "__proto__" {
            return;
        }
        if let Some(i) = self.position(&key) {
            self.entries[i].1 = value;
            return;
        }
        self.entries.push((key.clone(), value));
        let len = self.entries.len();
        if len == INDEX_FROM + 1 {
            self.index = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect();
        } else if len > INDEX_FROM + 1 {
            self.index.insert(key, len - 1);
        }
    }
}

impl Serialize for Properties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, value) in &self.entries {
            match &value.exact_json {
                None => map.serialize_entry(key, &value.text)?,
                Some(json) => {
                    let raw = serde_json::value::RawValue::from_string(json.to_string())
                        .map_err(serde::ser::Error::custom)?;
                    map.serialize_entry(key, &raw)?;
                }
            }
        }
        map.end()
    }
}
