//! A nesting limit for decoding: a serde [`Deserializer`] that wraps another one and fails
//! once the value nests deeper than a limit, counting options, sequences, maps and enums
//! (every recursive type passes through one of them: `Type::List(Box<Type>)` is an enum).
//!
//! Without it, a file of a few kilobytes whose checksum is right but whose payload nests a
//! type or a value thousands of levels deep overflows the stack of every reader (decoding
//! and dropping recurse once per level), which aborts the process.

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// How deep a file's contents may nest: values of the literal syntax's depth (200 levels,
/// two here each: the enum and its list) fit, and decoding this deep stays far within a
/// 2 MiB thread stack.
pub const MAX_NESTING: usize = 512;

thread_local! {
    /// Set when the limit is hit (postcard's errors do not keep a custom message).
    static TOO_DEEP: Cell<bool> = const { Cell::new(false) };
}

/// Decodes a `T` from the start of `bytes` (postcard), with at most [`MAX_NESTING`] levels
/// of nesting; returns it and the number of bytes after it, or the message.
pub(crate) fn take_from_bytes<T: de::DeserializeOwned>(bytes: &[u8]) -> Result<(T, usize), String> {
    TOO_DEEP.with(|c| c.set(false));
    let mut d = postcard::Deserializer::from_bytes(bytes);
    let value = T::deserialize(Limited {
        de: &mut d,
        left: MAX_NESTING,
    });
    let value = match value {
        Ok(v) => v,
        Err(_) if TOO_DEEP.with(Cell::get) => {
            return Err(format!("nested deeper than {MAX_NESTING} levels"));
        }
        Err(e) => return Err(e.to_string()),
    };
    let rest = d.finalize().map_err(|e| e.to_string())?;
    Ok((value, rest.len()))
}

/// `de` with at most `left` more levels of nesting.
struct Limited<D> {
    de: D,
    left: usize,
}

fn deeper<E: de::Error>(left: usize) -> Result<usize, E> {
    left.checked_sub(1).ok_or_else(|| {
        TOO_DEEP.with(|c| c.set(true));
        E::custom(format!("nested deeper than {MAX_NESTING} levels"))
    })
}

macro_rules! forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
                self.de.$method(Wrap { v, left: self.left })
            }
        )*
    };
}

macro_rules! counted {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, v: V) -> Result<V::Value, D::Error> {
                let left = deeper(self.left)?;
                self.de.$method(Wrap { v, left })
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Limited<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_identifier,
        deserialize_ignored_any,
    );
    counted!(deserialize_option, deserialize_seq, deserialize_map);

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.de
            .deserialize_unit_struct(name, Wrap { v, left: self.left })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.de
            .deserialize_newtype_struct(name, Wrap { v, left: self.left })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_tuple(len, Wrap { v, left: self.left })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.de
            .deserialize_tuple_struct(name, len, Wrap { v, left: self.left })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        self.de
            .deserialize_struct(name, fields, Wrap { v, left: self.left })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, D::Error> {
        let left = deeper(self.left)?;
        self.de.deserialize_enum(name, variants, Wrap { v, left })
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A visitor whose nested deserializers stay limited.
struct Wrap<V> {
    v: V,
    left: usize,
}

macro_rules! visit {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(
            fn $method<E: de::Error>(self, x: $ty) -> Result<Self::Value, E> {
                self.v.$method(x)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.v.expecting(f)
    }

    visit!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_f64: f64,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: Vec<u8>,
    );

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.v.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.v.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.v.visit_some(Limited {
            de,
            left: self.left,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.v.visit_newtype_struct(Limited {
            de,
            left: self.left,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.v.visit_seq(Wrap {
            v: a,
            left: self.left,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.v.visit_map(Wrap {
            v: a,
            left: self.left,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
        self.v.visit_enum(Wrap {
            v: a,
            left: self.left,
        })
    }
}

/// A seed whose deserializer stays limited.
struct Seed<S> {
    seed: S,
    left: usize,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(Limited {
            de,
            left: self.left,
        })
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.v.next_element_seed(Seed {
            seed,
            left: self.left,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.v.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.v.next_key_seed(Seed {
            seed,
            left: self.left,
        })
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.v.next_value_seed(Seed {
            seed,
            left: self.left,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.v.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let left = self.left;
        let (value, v) = self.v.variant_seed(Seed { seed, left })?;
        Ok((value, Wrap { v, left }))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.v.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.v.newtype_variant_seed(Seed {
            seed,
            left: self.left,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value, A::Error> {
        self.v.tuple_variant(len, Wrap { v, left: self.left })
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, A::Error> {
        self.v.struct_variant(fields, Wrap { v, left: self.left })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_stdlib::{Type, Value};

    fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        let (v, rest) = take_from_bytes(bytes)?;
        assert_eq!(rest, 0);
        Ok(v)
    }

    fn nested_list(depth: usize) -> Value {
        let mut v = Value::Long(1);
        for _ in 0..depth {
            v = Value::List(vec![v]);
        }
        v
    }

    #[test]
    fn values_round_trip_through_the_limit() {
        let v = Value::Struct(vec![
            ("a".into(), nested_list(3)),
            (
                "b".into(),
                Value::Map([(Value::Int(1), Value::Control)].into()),
            ),
            ("c".into(), Value::String("s".into())),
        ]);
        let bytes =
            postcard::to_stdvec(&(Some(v.clone()), Type::List(Box::new(Type::Any)))).unwrap();
        let back: (Option<Value>, Type) = decode(&bytes).unwrap();
        assert_eq!(back, (Some(v), Type::List(Box::new(Type::Any))));
    }

    #[test]
    fn nesting_beyond_the_limit_is_an_error() {
        // Two levels per list (the enum and its sequence), one for the innermost enum.
        let fits = nested_list((MAX_NESTING - 1) / 2);
        let bytes = postcard::to_stdvec(&fits).unwrap();
        assert_eq!(decode::<Value>(&bytes).unwrap(), fits);
        let deep = postcard::to_stdvec(&nested_list(MAX_NESTING / 2 + 1)).unwrap();
        assert_eq!(
            decode::<Value>(&deep).unwrap_err(),
            format!("nested deeper than {MAX_NESTING} levels")
        );
        // A type nests one level per list.
        let mut ty = Type::Long;
        for _ in 0..MAX_NESTING {
            ty = Type::List(Box::new(ty));
        }
        let bytes = postcard::to_stdvec(&ty).unwrap();
        assert!(decode::<Type>(&bytes).is_err());
        // Other errors keep their message.
        assert_eq!(
            decode::<Value>(&[0x80]).unwrap_err(),
            postcard::Error::DeserializeUnexpectedEnd.to_string()
        );
    }
}
