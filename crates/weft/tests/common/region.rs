//! The offsets of a pub/sub region's areas, computed from its counts exactly as
//! docs/protocol.md ("Region") gives them, so that tests (and the test peer) can write the
//! states a crash or a hostile peer leaves behind straight into the file.

/// Offsets of one region's areas (bytes from the start of the file).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub participants: u64,
    pub held: u64,
    pub topics: u64,
    pub slots: u64,
    pub ext: u64,
    pub holdings: u64,
    pub table: u64,
    pub hot: u64,
    pub stats: u64,
    pub pubmap: u64,
    pub rings: u64,
    pub inline: u64,
    pub inline_area: u64,
    pub meta: u64,
    pub data: u64,
}

impl Layout {
    /// The layout for these counts.
    pub fn new(
        participants: u64,
        held: u64,
        topics: u64,
        slots: u64,
        blocks: u64,
        inline_topics: u64,
    ) -> Layout {
        let ext = 512 + 64 * participants;
        let holdings = ext + 64 * participants;
        let table = (holdings + 4 * participants * held).div_ceil(64) * 64;
        let hot = table + 256 * topics;
        let stats = hot + 64 * topics;
        let pubmap = stats + 64 * topics;
        let rings = (pubmap + 8 * participants.div_ceil(64) * topics).div_ceil(64) * 64;
        let inline = (rings + 16 * slots * topics).div_ceil(64) * 64;
        let inline_area = 192 + 64 * slots;
        let meta = inline + inline_area * inline_topics;
        let data = (meta + 64 * blocks).div_ceil(4096) * 4096;
        Layout {
            participants,
            held,
            topics,
            slots,
            ext,
            holdings,
            table,
            hot,
            stats,
            pubmap,
            rings,
            inline,
            inline_area,
            meta,
            data,
        }
    }

    /// The layout of an existing region file, from its configuration line.
    pub fn of_file(f: &std::fs::File) -> Layout {
        let w = |off| get64(f, off);
        Layout::new(w(128), w(136), w(144), w(152), w(160), w(184))
    }

    /// Topic `t`'s table entry.
    pub fn entry(&self, t: u64) -> u64 {
        self.table + 256 * t
    }

    /// Slot `seq` of topic `t`'s descriptor ring, for a blocks topic.
    pub fn slot(&self, t: u64, seq: u64) -> u64 {
        self.ring_slot(t, seq, self.slots)
    }

    /// Slot `seq` of topic `t`'s descriptor ring of `n` slots (2 for a latest topic), which
    /// starts the topic's area of `slots`.
    pub fn ring_slot(&self, t: u64, seq: u64, n: u64) -> u64 {
        self.rings + 16 * (self.slots * t + (seq & (n - 1)))
    }

    /// Inline area `k` (the ring's header; the slots start 192 bytes in).
    pub fn inline_area(&self, k: u64) -> u64 {
        self.inline + self.inline_area * k
    }

    /// Participant `p`'s line of records.
    pub fn ext(&self, p: u64) -> u64 {
        self.ext + 64 * p
    }

    /// Participant `p`'s holdings entry `e`.
    pub fn holding(&self, p: u64, e: u64) -> u64 {
        self.holdings + 4 * (self.held * p + e)
    }

    /// Block `b`'s word (count and mark), one cache line per block.
    pub fn block_word(&self, b: u64) -> u64 {
        self.meta + 64 * b
    }
}

/// Reads a little-endian u64 at `off`.
pub fn get64(f: &std::fs::File, off: u64) -> u64 {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, off).unwrap();
    u64::from_le_bytes(b)
}

/// Reads a little-endian u32 at `off`.
pub fn get32(f: &std::fs::File, off: u64) -> u32 {
    use std::os::unix::fs::FileExt;
    let mut b = [0u8; 4];
    f.read_exact_at(&mut b, off).unwrap();
    u32::from_le_bytes(b)
}

/// Writes a little-endian u64 at `off`.
pub fn put64(f: &std::fs::File, off: u64, v: u64) {
    use std::os::unix::fs::FileExt;
    f.write_all_at(&v.to_le_bytes(), off).unwrap();
}

/// Writes a little-endian u32 at `off`.
pub fn put32(f: &std::fs::File, off: u64, v: u32) {
    use std::os::unix::fs::FileExt;
    f.write_all_at(&v.to_le_bytes(), off).unwrap();
}

/// Whether a holdings entry records a block reference (not empty, not a subscription).
pub fn is_block(entry: u32) -> bool {
    entry != 0 && entry & (1 << 31) == 0
}
