//! The tokens of one place: a FIFO ring buffer with the operations of `VecDeque` the engine
//! uses (same orders and results), plus [`Tokens::push_back_with`], which builds a token
//! straight in its slot.
//!
//! Why not `VecDeque`: its `push_back(v)` keeps `v` in a stack temporary across the (cold)
//! growth call and copies it into the buffer afterwards as two 16-byte pieces; a token that
//! was just written there as a tag byte and a payload then stalls on store forwarding (a
//! fifth of a fast firing). Here the value is built after the capacity check, by a closure,
//! and stored as its parts.
//!
//! Invariant: the buffer's length is 0 or a power of two, and every slot outside the live
//! range holds the placeholder [`Value::Control`] (owns nothing, so overwriting it without a
//! drop loses nothing).

use pnet_stdlib::Value;

#[derive(Debug, Clone, Default)]
pub(crate) struct Tokens {
    buf: Vec<Value>,
    head: usize,
    len: usize,
    /// Tokens removed so far (each removal moves every other token at most one place towards
    /// the front: see the engine's enabling search).
    removals: u64,
}

impl Tokens {
    pub(crate) fn new() -> Tokens {
        Tokens::default()
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// How many tokens were removed so far.
    #[inline(always)]
    pub(crate) fn removals(&self) -> u64 {
        self.removals
    }

    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer index of token `j` (`j <= len`, buffer not empty).
    #[inline(always)]
    fn slot(&self, j: usize) -> usize {
        (self.head + j) & (self.buf.len() - 1)
    }

    #[inline(always)]
    pub(crate) fn get(&self, j: usize) -> Option<&Value> {
        if j < self.len {
            self.buf.get(self.slot(j))
        } else {
            None
        }
    }

    #[inline(always)]
    pub(crate) fn front(&self) -> Option<&Value> {
        self.get(0)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Value> + '_ {
        (0..self.len).map(move |j| &self.buf[self.slot(j)])
    }

    #[inline(always)]
    pub(crate) fn push_back(&mut self, v: Value) {
        self.push_back_with(|| v);
    }

    /// Appends the value `make` builds, after making room, so that it is built in its slot.
    #[inline(always)]
    pub(crate) fn push_back_with(&mut self, make: impl FnOnce() -> Value) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let k = self.slot(self.len);
        if let Some(s) = self.buf.get_mut(k) {
            // The slot holds the placeholder (see the invariant): nothing to drop.
            std::mem::forget(std::mem::replace(s, make()));
            self.len += 1;
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(4);
        let mut buf = Vec::with_capacity(cap);
        for j in 0..self.len {
            let k = self.slot(j);
            buf.push(std::mem::replace(&mut self.buf[k], Value::Control));
        }
        buf.resize(cap, Value::Control);
        self.buf = buf;
        self.head = 0;
    }

    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<Value> {
        if self.len == 0 {
            return None;
        }
        let k = self.head;
        let v = std::mem::replace(self.buf.get_mut(k)?, Value::Control);
        self.head = self.slot(1);
        self.len -= 1;
        self.removals += 1;
        Some(v)
    }

    /// Removes token `j`, putting the front token in its place (as
    /// `VecDeque::swap_remove_front`).
    pub(crate) fn swap_remove_front(&mut self, j: usize) -> Option<Value> {
        if j >= self.len {
            return None;
        }
        if j != 0 {
            let (a, b) = (self.slot(0), self.slot(j));
            self.buf.swap(a, b);
        }
        self.pop_front()
    }

    /// Removes token `j`, keeping the order of the others (as `VecDeque::remove`).
    pub(crate) fn remove(&mut self, j: usize) -> Option<Value> {
        if j >= self.len {
            return None;
        }
        for k in (1..=j).rev() {
            let (a, b) = (self.slot(k), self.slot(k - 1));
            self.buf.swap(a, b);
        }
        self.pop_front()
    }

    /// Removes all tokens, in order.
    pub(crate) fn take_all(&mut self) -> Vec<Value> {
        let mut out = Vec::with_capacity(self.len);
        while let Some(v) = self.pop_front() {
            out.push(v);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use std::collections::VecDeque;

    /// Random operation sequences give the same tokens as `VecDeque`, across growth and
    /// wrap-around, with owning values among them.
    #[test]
    fn behaves_as_vecdeque() {
        let mut rng = Rng::new(7);
        for round in 0..200 {
            let mut a = Tokens::new();
            let mut b: VecDeque<Value> = VecDeque::new();
            for step in 0..400 {
                let v = if step % 3 == 0 {
                    Value::String(format!("s{round}-{step}").into())
                } else {
                    Value::Long(step as i64)
                };
                let n = b.len().max(1);
                match rng.below(7) {
                    0..=2 => {
                        a.push_back(v.clone());
                        b.push_back(v);
                    }
                    3 => assert_eq!(a.pop_front(), b.pop_front()),
                    4 => {
                        let j = rng.below(n + 1);
                        assert_eq!(a.swap_remove_front(j), b.swap_remove_front(j));
                    }
                    5 => {
                        let j = rng.below(n + 1);
                        assert_eq!(a.remove(j), b.remove(j));
                    }
                    _ => {
                        let j = rng.below(n + 1);
                        assert_eq!(a.get(j), b.get(j));
                        assert_eq!(a.front(), b.front());
                    }
                }
                assert_eq!(a.len(), b.len());
                assert!(a.iter().eq(b.iter()));
            }
            assert_eq!(a.take_all(), b.drain(..).collect::<Vec<_>>());
            assert_eq!(a.len(), 0);
            // Outside the live range only placeholders remain (nothing leaked or kept).
            assert!(a.buf.iter().all(|v| matches!(v, Value::Control)));
        }
    }
}
