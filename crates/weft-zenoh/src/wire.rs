//! The attachment a bridge puts on every Zenoh sample it publishes: who forwarded it, where it
//! came from, its sequence number in its source topic, and the topic's type.
//!
//! Layout (little-endian; version 1):
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 2 | magic `b"wz"` |
//! | 2 | 1 | version (1) |
//! | 3 | 1 | flags: bit 0 = typed |
//! | 4 | 4 | reserved (0) |
//! | 8 | 8 | `instance`: the forwarding bridge's random id |
//! | 16 | 8 | `origin`: FNV-1a 64 of the source's origin name (host and region by default) |
//! | 24 | 8 | `seq`: the sample's sequence number in its source topic |
//! | 32 | 8 | `excluded`: sequences before `seq`, after the previous sample this bridge forwarded on the topic, that it skipped on purpose (its own samples, and sequences the source skipped without loss) |
//! | 40 | 8 | typed only: type fingerprint ([`TypeMeta::fingerprint`], of the name and size) |
//! | 48 | 4 | typed only: type size in bytes |
//! | 52 | 4 | typed only: type alignment (0: unknown) |
//! | 56 | 2 | typed only: type name length `n` (at most 256) |
//! | 58 | n | typed only: type name (UTF-8) |
//!
//! An attachment from the network is untrusted: [`SampleHeader::decode`] checks the magic,
//! version, lengths, UTF-8 and that the fingerprint agrees with the name and size, and gives
//! `None` for anything else.

use crate::typeinfo::TypeMeta;

const MAGIC: [u8; 2] = *b"wz";
const VERSION: u8 = 1;
const FLAG_TYPED: u8 = 1;
const BASE: usize = 40;
const TYPED: usize = 58;
/// The longest type name carried.
pub const TYPE_NAME_MAX: usize = 256;

/// What a bridge says about one sample it forwards (the Zenoh attachment).
///
/// # Examples
/// ```
/// use weft_zenoh::{wire::SampleHeader, TypeMeta};
/// let h = SampleHeader {
///     instance: 7,
///     origin: 9,
///     seq: 41,
///     excluded: 0,
///     ty: Some(TypeMeta::new("app::Tick", 16, 8)),
/// };
/// assert_eq!(SampleHeader::decode(&h.encode()), Some(h));
/// assert_eq!(SampleHeader::decode(b"not a header"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleHeader {
    /// The forwarding bridge's random id (a bridge drops samples that carry its own).
    pub instance: u64,
    /// The source's origin id ([`crate::BridgeConfig::origin`], hashed): sequence numbers are
    /// compared per origin and topic.
    pub origin: u64,
    /// The sample's sequence number in its source topic.
    pub seq: u64,
    /// Sequences between the previous forwarded sample and this one that were skipped on
    /// purpose, so not lost.
    pub excluded: u64,
    /// The source topic's type, for a typed topic.
    pub ty: Option<TypeMeta>,
}

impl SampleHeader {
    /// The attachment bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(BASE + self.ty.as_ref().map_or(0, |t| 18 + t.name.len()));
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(if self.ty.is_some() { FLAG_TYPED } else { 0 });
        out.extend_from_slice(&[0; 4]);
        for v in [self.instance, self.origin, self.seq, self.excluded] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        if let Some(t) = &self.ty {
            // TypeMeta::new caps the name at TYPE_NAME_MAX bytes.
            out.extend_from_slice(&t.fingerprint().to_le_bytes());
            out.extend_from_slice(&t.size.to_le_bytes());
            out.extend_from_slice(&t.align.to_le_bytes());
            out.extend_from_slice(&(t.name.len() as u16).to_le_bytes());
            out.extend_from_slice(t.name.as_bytes());
        }
        out
    }

    /// Parses an attachment; `None` for anything that is not a well-formed version-1 header.
    pub fn decode(b: &[u8]) -> Option<SampleHeader> {
        if b.len() < BASE || b[0..2] != MAGIC || b[2] != VERSION || b[3] & !FLAG_TYPED != 0 {
            return None;
        }
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let mut h = SampleHeader {
            instance: u64_at(8),
            origin: u64_at(16),
            seq: u64_at(24),
            excluded: u64_at(32),
            ty: None,
        };
        if b[3] & FLAG_TYPED == 0 {
            return (b.len() == BASE).then_some(h);
        }
        if b.len() < TYPED {
            return None;
        }
        let n = u16::from_le_bytes([b[56], b[57]]) as usize;
        if n > TYPE_NAME_MAX || b.len() != TYPED + n {
            return None;
        }
        let name = core::str::from_utf8(&b[TYPED..]).ok()?;
        let (size, align) = (u32_at(48), u32_at(52));
        let meta = TypeMeta::new(name, size, align);
        if size == 0 || meta.fingerprint() != u64_at(40) {
            return None;
        }
        h.ty = Some(meta);
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for ty in [
            None,
            Some(TypeMeta::new("a::B", 24, 0)),
            Some(TypeMeta::new("", 1, 1)),
        ] {
            let h = SampleHeader {
                instance: u64::MAX,
                origin: 1,
                seq: 1 << 40,
                excluded: 3,
                ty,
            };
            assert_eq!(SampleHeader::decode(&h.encode()), Some(h));
        }
    }

    #[test]
    fn damaged_headers_are_refused() {
        let h = SampleHeader {
            instance: 1,
            origin: 2,
            seq: 3,
            excluded: 0,
            ty: Some(TypeMeta::new("app::Tick", 16, 8)),
        };
        let good = h.encode();
        // Every truncation, and every single-byte change outside the integers, is refused.
        for cut in 0..good.len() {
            assert_eq!(SampleHeader::decode(&good[..cut]), None, "cut at {cut}");
        }
        for i in [0, 1, 2, 3, 40, 48, 56, 57, 58, good.len() - 1] {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert_eq!(SampleHeader::decode(&bad), None, "byte {i} changed");
        }
        let mut long = good.clone();
        long.push(0);
        assert_eq!(SampleHeader::decode(&long), None);
        let mut not_utf8 = good;
        let last = not_utf8.len() - 1;
        not_utf8[last] = 0xff;
        assert_eq!(SampleHeader::decode(&not_utf8), None);
    }
}
