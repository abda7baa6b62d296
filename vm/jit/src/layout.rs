//! Where generated code finds the scalars inside a frame slot (`Option<Value>`).
//!
//! `pnet_stdlib::Value` is `#[repr(u8)]` ([`pnet_stdlib::value::VALUE_REPR_U8`], RFC 2195): a
//! `#[repr(C)]` union of one `#[repr(C)]` struct per variant, each starting with the `u8` tag.
//! So the tag is byte 0 and the payload of `Value::Long(x)` is at the offset of `v` in
//! `#[repr(C)] struct { tag: u8, v: i64 }` ([`Variant`]). `Option<Value>` is as large as
//! `Value` when its `None` lives in an unused tag value (the enum's only niche).
//!
//! None of this is taken on trust: [`Layout::probe`] checks it on sample values at
//! [`crate::Jit::new`] (the sizes; every variant's tag read back, all distinct, `None`'s tag
//! byte none of them; every scalar's payload read back at its offset, inside `Some`; a scalar
//! written into a `None` slot the way generated code writes it (the slot's first 16 bytes:
//! tag, payload, zeros) reads back as that `Some`). If a check fails, the JIT hands the
//! frame over through a buffer of words instead (the slower path, which needs no layout).

use std::mem::{offset_of, size_of};

use pnet_stdlib::Value;

use crate::rt::value_of;
use crate::types::Nt;

/// A variant `V(T)` of a `#[repr(u8)]` enum, as RFC 2195 lays it out.
#[repr(C)]
struct Variant<T> {
    tag: u8,
    v: T,
}

/// The payload offset of the variant holding a `t`, by the RFC's layout rule.
pub(crate) fn payload_offset(t: Nt) -> usize {
    match t {
        Nt::Bool => offset_of!(Variant<bool>, v),
        Nt::Int => offset_of!(Variant<i32>, v),
        Nt::Long => offset_of!(Variant<i64>, v),
        Nt::UInt => offset_of!(Variant<u32>, v),
        Nt::ULong => offset_of!(Variant<u64>, v),
        Nt::Float => offset_of!(Variant<f32>, v),
        Nt::Double => offset_of!(Variant<f64>, v),
        Nt::Char => offset_of!(Variant<i8>, v),
    }
}

/// The size in bytes of a `t`'s payload.
pub(crate) fn payload_size(t: Nt) -> usize {
    match t {
        Nt::Bool | Nt::Char => 1,
        Nt::Int | Nt::UInt | Nt::Float => 4,
        Nt::Long | Nt::ULong | Nt::Double => 8,
    }
}

/// One value of every variant, in declaration order (a variant added to `Value` gets a rank
/// in `Value::type_rank`'s exhaustive match, and needs a sample here: the test
/// `every_variant_has_a_sample` counts them).
fn samples() -> Vec<Value> {
    vec![
        Value::Control,
        Value::Bool(true),
        Value::Int(1),
        Value::Long(1),
        Value::UInt(1),
        Value::ULong(1),
        Value::Float(1.0),
        Value::Double(1.0),
        Value::Char(1),
        Value::string("s"),
        Value::Bitset(Default::default()),
        Value::Bytearray(Vec::new()),
        Value::Bigint(Default::default()),
        Value::Shared(Box::new(pnet_stdlib::Shared {
            place: "p".into(),
            value: Value::Control,
        })),
        Value::List(Vec::new()),
        Value::Set(Default::default()),
        Value::Map(Default::default()),
        Value::Struct(Vec::new()),
    ]
}

/// The position of `v`'s variant in [`samples`]: its type's rank (an exhaustive match in
/// the stdlib, in declaration order).
fn variant_index(v: &Value) -> usize {
    usize::from(v.type_rank())
}

/// A value of type `t` whose payload bytes are all distinct from the bytes around it.
fn sentinel(t: Nt) -> u64 {
    match t {
        Nt::Bool => 1,
        Nt::Char => 0x5a,
        Nt::Int | Nt::UInt => 0x1234_5678,
        Nt::Float => u64::from(1.5f32.to_bits()),
        Nt::Long | Nt::ULong => 0x0123_4567_89ab_cdef,
        Nt::Double => 3.25f64.to_bits(),
    }
}

/// The layout facts generated code uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `size_of::<Option<Value>>()`: the stride of a frame.
    pub slot_size: u32,
    /// The tag byte of `None`.
    pub none_tag: u8,
    /// Per [`Nt`] (in the order of [`Nt::ALL`]): the tag of its variant, and the offset of its
    /// payload.
    tags: [u8; 8],
    offsets: [u8; 8],
}

impl Layout {
    pub fn tag(&self, t: Nt) -> u8 {
        self.tags[t as usize]
    }

    pub fn offset(&self, t: Nt) -> i32 {
        i32::from(self.offsets[t as usize])
    }

    /// The layout of this build's `Value`, if every check holds.
    pub fn probe() -> Option<Layout> {
        if !pnet_stdlib::value::VALUE_REPR_U8
            || size_of::<Option<Value>>() != size_of::<Value>()
            || size_of::<Value>() > 255
            || size_of::<Value>() < 16
        {
            return None;
        }
        // Every variant's tag, all distinct (the sample list is complete and in order).
        let samples = samples();
        let mut tags = Vec::with_capacity(samples.len());
        for (i, v) in samples.iter().enumerate() {
            if variant_index(v) != i {
                return None;
            }
            let t = crate::tag_of_value(v)?;
            if tags.contains(&t) {
                return None;
            }
            tags.push(t);
        }
        // `None` is kept in the tag byte, in a value that is no variant's tag.
        let none_tag = crate::tag_of_slot(&None)?;
        if tags.contains(&none_tag) {
            return None;
        }
        let mut layout = Layout {
            slot_size: size_of::<Value>() as u32,
            none_tag,
            tags: [0; 8],
            offsets: [0; 8],
        };
        for t in Nt::ALL {
            let off = payload_offset(t);
            // Generated code writes a slot's first 16 bytes as two words: the payload lies in
            // the first word (after the tag) or is the second.
            if !(off + payload_size(t) <= 8 || off == 8) {
                return None;
            }
            let bits = sentinel(t);
            let v = value_of(t, bits);
            let tag = tags[variant_index(&v)];
            layout.tags[t as usize] = tag;
            layout.offsets[t as usize] = off as u8;
            // Read back inside `Some`: the tag at byte 0, the payload at its offset.
            let slot = Some(v.clone());
            if crate::tag_of_slot(&slot) != Some(tag)
                || crate::payload_of_slot(&slot, t, off) != Some(bits)
            {
                return None;
            }
            // Written into a `None` slot the way generated code writes, it reads back as that
            // `Some`.
            let mut slot: Option<Value> = None;
            crate::write_slot(&mut slot, t, tag, off, bits);
            if slot.as_ref() != Some(&v) {
                return None;
            }
        }
        Some(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_of_this_build_is_usable() {
        // Sizes before and after `#[repr(u8)]` on `Value`: 32 and 32 (64-bit hosts).
        assert_eq!(size_of::<Value>(), size_of::<Option<Value>>());
        let l = Layout::probe().expect("the layout checks hold");
        assert_eq!(l.slot_size as usize, size_of::<Value>());
        // The tags are the declaration positions (RFC 2195: no explicit discriminants).
        assert_eq!(l.tag(Nt::Bool), 1);
        assert_eq!(l.tag(Nt::Long), 3);
        assert_eq!(l.tag(Nt::Char), 8);
        assert_eq!(l.offset(Nt::Long), 8);
        assert_eq!(l.offset(Nt::Int), 4);
        assert_eq!(l.offset(Nt::Bool), 1);
        assert!(l.none_tag > 17);
    }

    #[test]
    fn every_variant_has_a_sample() {
        let s = samples();
        assert_eq!(s.len(), 18);
        for (i, v) in s.iter().enumerate() {
            assert_eq!(variant_index(v), i, "{v:?}");
        }
    }
}
