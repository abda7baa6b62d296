//! Compact storage of explored markings: every marking packed into a fixed number of bytes
//! (`bits` per place, `bits` in 1, 2, 4, 8, 16, 32), kept in an arena of chunks, and an
//! open-addressing hash index of 8-byte slots (32 bits of hash tag, 32 bits of state id).
//!
//! Memory per state: `stride` bytes in the arena plus 8 bytes / load factor in the index
//! (the index doubles at 3/4 load, so between 10.7 and 21.3 bytes).

/// How markings are packed: `bits` per place, little-endian, places in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    pub bits: u32,
    pub places: usize,
}

impl Packing {
    /// The smallest packing holding counts up to `max` for `places` places.
    pub fn for_max(places: usize, max: u64) -> Packing {
        let bits = [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .find(|&b| max < (1u64 << b))
            .unwrap_or(32);
        Packing { bits, places }
    }

    /// The next wider packing, if any.
    pub fn wider(self) -> Option<Packing> {
        (self.bits < 32).then_some(Packing {
            bits: self.bits * 2,
            places: self.places,
        })
    }

    pub fn max_value(self) -> u64 {
        (1u64 << self.bits) - 1
    }

    /// Bytes per packed marking (at least 1).
    pub fn stride(self) -> usize {
        (self.places * self.bits as usize).div_ceil(8).max(1)
    }

    #[inline]
    pub fn get(self, buf: &[u8], p: usize) -> u32 {
        match self.bits {
            32 => u32::from_le_bytes(buf[p * 4..p * 4 + 4].try_into().unwrap_or_default()),
            16 => u16::from_le_bytes(buf[p * 2..p * 2 + 2].try_into().unwrap_or_default()) as u32,
            8 => buf[p] as u32,
            b => {
                let bit = p * b as usize;
                ((buf[bit / 8] >> (bit % 8)) & ((1u8 << b) - 1)) as u32
            }
        }
    }

    /// Sets place `p` to `v` (`v` must fit the packing).
    #[inline]
    pub fn set(self, buf: &mut [u8], p: usize, v: u32) {
        match self.bits {
            32 => buf[p * 4..p * 4 + 4].copy_from_slice(&v.to_le_bytes()),
            16 => buf[p * 2..p * 2 + 2].copy_from_slice(&(v as u16).to_le_bytes()),
            8 => buf[p] = v as u8,
            b => {
                let bit = p * b as usize;
                let mask = ((1u8 << b) - 1) << (bit % 8);
                let byte = &mut buf[bit / 8];
                *byte = (*byte & !mask) | (((v as u8) << (bit % 8)) & mask);
            }
        }
    }

    pub fn pack(self, marking: &[u32], buf: &mut [u8]) {
        buf.fill(0);
        for (p, &v) in marking.iter().enumerate() {
            self.set(buf, p, v);
        }
    }

    pub fn unpack(self, buf: &[u8], marking: &mut Vec<u32>) {
        marking.clear();
        match self.bits {
            8 => marking.extend(buf[..self.places].iter().map(|&b| b as u32)),
            _ => marking.extend((0..self.places).map(|p| self.get(buf, p))),
        }
    }
}

const CHUNK_STATES: usize = 1 << 16;
const EMPTY: u64 = 0;

/// Packed markings with a hash index. State ids are dense, in insertion order.
#[derive(Debug)]
pub struct StateStore {
    stride: usize,
    chunks: Vec<Box<[u8]>>,
    len: usize,
    table: Vec<u64>,
    mask: usize,
}

impl StateStore {
    pub fn new(stride: usize) -> StateStore {
        StateStore {
            stride,
            chunks: Vec::new(),
            len: 0,
            table: vec![EMPTY; 1024],
            mask: 1023,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The packed marking of a state.
    #[inline]
    pub fn get(&self, id: u32) -> &[u8] {
        let i = id as usize;
        let off = (i % CHUNK_STATES) * self.stride;
        &self.chunks[i / CHUNK_STATES][off..off + self.stride]
    }

    /// Bytes held by the hash index.
    pub fn index_bytes(&self) -> usize {
        self.table.len() * 8
    }

    /// Bytes held by the arena and the index.
    pub fn memory_bytes(&self) -> usize {
        self.chunks.len() * CHUNK_STATES * self.stride + self.table.len() * 8
    }

    pub fn find(&self, s: &[u8]) -> Option<u32> {
        let h = hash(s);
        let tag = h >> 32;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.table[i];
            if e == EMPTY {
                return None;
            }
            if e >> 32 == tag {
                let id = (e as u32).wrapping_sub(1);
                if self.get(id) == s {
                    return Some(id);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Hints the CPU to load the index slot of a hash (see [`hash`]); lets several lookups
    /// wait for memory at once.
    #[inline]
    pub fn prefetch(&self, h: u64) {
        let i = h as usize & self.mask;
        prefetch_read(&self.table[i]);
    }

    /// Inserts a marking: its id and whether it is new. `None` when 2^32 - 1 states are held.
    #[inline]
    pub fn insert(&mut self, s: &[u8]) -> Option<(u32, bool)> {
        self.insert_hashed(s, hash(s))
    }

    /// [`StateStore::insert`] with the hash already computed.
    #[inline]
    pub fn insert_hashed(&mut self, s: &[u8], h: u64) -> Option<(u32, bool)> {
        let tag = h >> 32;
        let mut i = h as usize & self.mask;
        loop {
            let e = self.table[i];
            if e == EMPTY {
                break;
            }
            if e >> 32 == tag {
                let id = (e as u32).wrapping_sub(1);
                if self.get(id) == s {
                    return Some((id, false));
                }
            }
            i = (i + 1) & self.mask;
        }
        if self.len >= u32::MAX as usize - 1 {
            return None;
        }
        let id = self.len as u32;
        self.push(s);
        self.table[i] = (tag << 32) | (id as u64 + 1);
        if (self.len + 1) * 4 > self.table.len() * 3 {
            self.grow();
        }
        Some((id, true))
    }

    fn push(&mut self, s: &[u8]) {
        let i = self.len;
        if i / CHUNK_STATES == self.chunks.len() {
            self.chunks
                .push(vec![0u8; CHUNK_STATES * self.stride].into_boxed_slice());
        }
        let off = (i % CHUNK_STATES) * self.stride;
        self.chunks[i / CHUNK_STATES][off..off + self.stride].copy_from_slice(s);
        self.len += 1;
    }

    fn grow(&mut self) {
        let n = self.table.len() * 2;
        let mut table = vec![EMPTY; n];
        let mask = n - 1;
        for id in 0..self.len as u32 {
            let h = hash(self.get(id));
            let mut i = h as usize & mask;
            while table[i] != EMPTY {
                i = (i + 1) & mask;
            }
            table[i] = ((h >> 32) << 32) | (id as u64 + 1);
        }
        self.table = table;
        self.mask = mask;
    }
}

#[inline(always)]
fn prefetch_read<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: prefetching is a hint; it never faults and the pointer comes from a reference.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(r as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// A fast 64-bit hash of a byte string (8-byte words, multiply-xorshift, final avalanche).
#[inline]
pub fn hash(s: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = s.len() as u64 ^ 0x2545_F491_4F6C_DD1D;
    let mut chunks = s.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_every_width() {
        for max in [1u64, 3, 15, 255, 65535, u32::MAX as u64] {
            let pk = Packing::for_max(7, max);
            assert_eq!(pk.max_value(), max);
            let m: Vec<u32> = (0..7u64).map(|i| ((i * 7919) % (max + 1)) as u32).collect();
            let mut buf = vec![0u8; pk.stride()];
            pk.pack(&m, &mut buf);
            let mut back = Vec::new();
            pk.unpack(&buf, &mut back);
            assert_eq!(back, m, "bits {}", pk.bits);
        }
        assert_eq!(Packing::for_max(75, 1).stride(), 10);
    }

    #[test]
    fn store_dedups_and_grows() {
        let mut st = StateStore::new(3);
        for i in 0..5000u32 {
            let b = i.to_le_bytes();
            assert_eq!(st.insert(&b[..3]), Some((i, true)));
        }
        for i in (0..5000u32).rev() {
            let b = i.to_le_bytes();
            assert_eq!(st.insert(&b[..3]), Some((i, false)));
            assert_eq!(st.find(&b[..3]), Some(i));
            assert_eq!(st.get(i), &b[..3]);
        }
        assert_eq!(st.find(&[1, 2, 200]), None);
        assert_eq!(st.len(), 5000);
    }
}
