//! Deterministic record sizes and contents, shared by the test peer and the tests, so that the
//! side that did not write a record can check it byte for byte.

/// splitmix64: a small, fast, well-mixed generator.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A record length in `1..=max`: half small (up to 4 KiB), half anywhere up to `max`.
    pub fn len(&mut self, max: usize) -> usize {
        let r = self.next();
        let cap = if r & 1 == 0 { max.min(4096) } else { max };
        1 + (r >> 1) as usize % cap
    }
}

/// Fills `buf` with the content of record `seq` of a run seeded with `seed`.
pub fn fill(seed: u64, seq: u64, buf: &mut [u8]) {
    let mut rng = Rng(seed ^ seq.wrapping_mul(0xA076_1D64_78BD_642F));
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&rng.next().to_le_bytes());
    }
    let tail = chunks.into_remainder();
    let last = rng.next().to_le_bytes();
    let n = tail.len();
    tail.copy_from_slice(&last[..n]);
}

/// Whether `buf` is exactly record `seq` of a run seeded with `seed`.
pub fn check(seed: u64, seq: u64, buf: &[u8]) -> bool {
    let mut rng = Rng(seed ^ seq.wrapping_mul(0xA076_1D64_78BD_642F));
    let mut chunks = buf.chunks_exact(8);
    for c in &mut chunks {
        if c != rng.next().to_le_bytes() {
            return false;
        }
    }
    let tail = chunks.remainder();
    tail == &rng.next().to_le_bytes()[..tail.len()]
}

/// A running digest of everything that passed, compared between writer and reader.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest(pub u64);

impl Digest {
    pub fn add(&mut self, bytes: &[u8]) {
        let mut h = self.0 ^ bytes.len() as u64;
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x0100_0000_01B3);
        }
        self.0 = h;
    }
}
