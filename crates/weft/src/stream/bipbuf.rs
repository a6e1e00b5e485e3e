//! SPSC bipartite buffer of variable-length records over raw memory (the bip-buffer idea of
//! Simon Cooke, with a watermark marking where the data before the wrap ends).
//!
//! Three cursors, each with one writer: `W` (end of committed data, writer), `L` (end of the
//! data before the wrap, writer), `R` (start of unreleased data, reader). The buffer is
//! *inverted* while `W < R`: data then lies in `[R, L)` followed by `[0, W)`. `W == R` is
//! empty; the writer never lets `W` catch up with `R` from below, so the two states never mix.
//! Every reservation is contiguous: a record that does not fit before the end of the buffer
//! goes to offset 0, and `L` records where the data before it ends. The writer may also go to
//! 0 before the end, while its reader keeps up, to keep both sides in memory the caches hold
//! (see [`HOT_WINDOW`]); the reader only ever follows `L`.
//!
//! A record is an 8-byte little-endian length, padding up to the alignment, the payload, and
//! padding up to the alignment. Everything the reader takes from shared memory (`W`, `L`, a
//! length) is validated against the capacity before it is used: a bad value is reported as
//! [`Corrupt`], never used to index.
//!
//! The cores know nothing about where their memory lives: a heap allocation in tests and loom
//! models, a shared mapping in [`crate::shm`].

// Under loom the shared-memory stream that uses the window policy, the wake helpers and the
// geometry accessors is compiled out (`stream/mod.rs`); only the cursor core is modelled.
#![cfg_attr(loom, allow(dead_code))]

use super::layout::{StreamControl, WaitWord, header_len, round_up};
use crate::sync::Ordering;
use crate::wait::Parked;
use core::ptr::NonNull;
use core::time::Duration;

/// A cache line, for the reader's prefetch.
const LINE: u64 = crate::ring::raw::LINE as u64;

/// How far ahead of the record it hands out the reader prefetches committed data. The lines a
/// reader reads were just written by the writer on another core and sit modified in that
/// core's cache, a slow transfer that the hardware prefetcher does not start early; asking for
/// them a kilobyte ahead overlaps the transfers. Each record of at most this size prefetches as
/// many bytes as it occupies, this far on, so the prefetches cover a stream of small records
/// once: 256-byte records between two processes (one core each) went from 23.7 and 23.8 to
/// 52.7 and 54.1 Mmsg/s at 1 MiB, from 15.8 and 16.9 to 33.6 and 25.9 at 8 MiB (alternating
/// builds). Larger records prefetch nothing: for them the time to the first byte is what
/// matters, the hardware prefetcher follows a reader through one, and prefetching a 50 MB
/// record whole took 255 µs.
const READ_AHEAD: u64 = 1024;

/// Every this many times a reader finds the stream empty, it prefetches the header lines where
/// the next record can start. A writer writes a record's header when it reserves it, so
/// while it fills a large record the header sits still, evicted from the writer's caches
/// by the fill; fetched only once `W` shows the record, it cost the reader a miss to memory:
/// from seeing `W` to holding a 50 MiB record took about 200 ns against 25 ns for 1 KiB, and
/// 60 to 75 ns with the prefetch. Rare enough that a prefetch which takes a line from a
/// writer still filling it (small records share a line with their header) costs nothing
/// measurable.
const IDLE_PREFETCH: u32 = 256;

/// Where a writer on a large stream wraps while its reader keeps up. A reader that keeps up
/// leaves the writer writing into lines it last touched a whole buffer ago, long gone from the
/// caches, and every store waits for memory; going back to 0 once past this window keeps both
/// sides inside it. 256-byte records between two processes through 64 MiB went from 13.6 and
/// 12.9 to 73.0 and 62.5 Mmsg/s (alternating builds); 8 MiB of data in flight
/// still ran at the speed of 1 MiB on this host, so 4 MiB leaves room for smaller caches.
pub(crate) const HOT_WINDOW: u64 = 4 << 20;

/// The default window for a stream of `capacity` bytes ([`StreamOptions`]): [`HOT_WINDOW`]
/// from four windows up, else none (`None`: the writer wraps only at the end).
///
/// [`StreamOptions`]: crate::stream::StreamOptions
pub(crate) fn default_window(capacity: u64) -> Option<u64> {
    (capacity >= 4 * HOT_WINDOW).then_some(HOT_WINDOW)
}

/// Grants of at least this many payload bytes are announced and committed with a mark (see
/// [`Announced`]). Below it a grant commits through `W` alone, as a copy does: for a small
/// record the mark's extra stores cost more than the handoff gains.
pub(crate) const MARK_FROM: u64 = 64 << 10;

/// Bit 63 of every commit mark: a record length never has it (lengths stay below 2^47).
const MARK_BIT: u64 = 1 << 63;

/// The mark of announced grant `k` of a writer whose key is `key`: bit 63 set, bit 0 clear, the
/// rest a mix of both (splitmix64's finaliser), so that bytes a payload left behind match it
/// only by design.
fn mark_value(k: u64, key: u64) -> u64 {
    let mut x = k ^ key;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x | MARK_BIT) & !1
}

/// A grant the writer announced on `W`'s line (docs/protocol.md, "Commit marks"): its commit
/// stores [`Announced::mark`] in the word right after the framed record, *before* `W`. That
/// word lies next to the last bytes the writer filled, so the store finds its line and page at
/// hand, where the store of `W` after a 50 MiB fill waited for a page walk and for a line the
/// spinning reader holds. A reader that has caught up with `W` and finds the announcement for
/// its position polls the mark and takes the record as soon as it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Announced {
    /// The sequence word, `4k + 2`.
    seq: u64,
    /// `W` when the grant was reserved.
    base: u64,
    /// Where its record starts: `base`, or 0.
    start: u64,
    /// Payload bytes reserved.
    len: u64,
    /// The mark's value for a commit of all `len` bytes (bit 0 set: shorter).
    mark: u64,
    /// Where the mark lies: right after the framed record.
    at: u64,
}

impl Announced {
    /// Reads the announcement on `line` if one is pending and whole (a seqlock read), and its
    /// record and mark lie inside the data area of `geo`, aligned (hostile input: anything
    /// else is ignored, and `W` alone decides).
    fn load(line: &super::layout::WriteLine, geo: &Geometry) -> Option<Announced> {
        // SYNC POINT: Acquire pairs with the Release store of `4k + 2` in `WriterCore::announce`:
        // the fields read next are at least that grant's.
        let seq = line.grant_seq.load(Ordering::Acquire);
        if seq % 4 != 2 {
            return None;
        }
        // Relaxed: checked by the re-read of the sequence below.
        let (base, start, len, mark) = (
            line.grant_base.load(Ordering::Relaxed),
            line.grant_start.load(Ordering::Relaxed),
            line.grant_len.load(Ordering::Relaxed),
            line.grant_mark.load(Ordering::Relaxed),
        );
        // SYNC POINT: orders the field loads before the re-read; pairs with the Release fence
        // in `announce` (a field of a later grant implies its odd sequence is visible).
        crate::sync::fence(Ordering::Acquire);
        if line.grant_seq.load(Ordering::Relaxed) != seq || !start.is_multiple_of(geo.align) {
            return None;
        }
        let at = geo.framed(len)?.checked_add(start)?;
        (at <= geo.capacity - 8).then_some(Announced {
            seq,
            base,
            start,
            len,
            mark,
            at,
        })
    }

    /// What the word `m` found where the mark lies says: `None` if the grant is not committed,
    /// else its payload length and framed size. A shorter commit's length is read from its
    /// header, `header` (after the mark's Acquire load); more than was reserved is `Corrupt`.
    fn committed<'a>(
        &self,
        geo: &Geometry,
        m: u64,
        header: impl FnOnce() -> &'a core::sync::atomic::AtomicU64,
    ) -> Result<Option<(u64, u64)>, Corrupt> {
        if m & !1 != self.mark {
            return Ok(None);
        }
        let len = if m & 1 == 0 {
            self.len
        } else {
            // Relaxed: ordered after the caller's Acquire load of the mark.
            u64::from_le(header().load(core::sync::atomic::Ordering::Relaxed))
        };
        match geo.framed(len).filter(|_| len <= self.len) {
            Some(framed) => Ok(Some((len, framed))),
            None => Err(Corrupt {
                what: "record length",
                value: len,
                expected: "at most the length announced for the grant",
            }),
        }
    }
}

/// The 8-byte word at offset `at` of a data area.
///
/// # Safety
/// `data .. data + at + 8` lies inside a live data area (aligned to at least 8, as every
/// stream's is) for `'a`, and `at` is a multiple of 8. Both cores read and write these words
/// (record headers, commit marks) only atomically: a hostile peer may write them at any time.
#[inline(always)]
unsafe fn data_word<'a>(data: NonNull<u8>, at: u64) -> &'a core::sync::atomic::AtomicU64 {
    // SAFETY: in bounds and aligned (the caller's contract); any bit pattern is a valid u64.
    unsafe { &*(data.as_ptr().add(at as usize) as *const core::sync::atomic::AtomicU64) }
}

/// Announce on `word`, re-check with `ready`, sleep at most `timeout` if still not ready.
fn park(
    word: &WaitWord,
    timeout: Option<Duration>,
    mut ready: impl FnMut() -> Result<bool, Corrupt>,
) -> Result<Parked, Corrupt> {
    let seen = word.announce();
    let outcome = if ready()? {
        Parked::NotNeeded
    } else if word.sleep(seen, timeout) {
        Parked::Woken
    } else {
        Parked::TimedOut { missed: ready()? }
    };
    word.withdraw();
    Ok(outcome)
}

/// A value read from shared memory failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt {
    /// Which value.
    pub(crate) what: &'static str,
    /// The value read.
    pub(crate) value: u64,
    /// What it should have been.
    pub(crate) expected: &'static str,
}

/// Why a reservation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReserveError {
    /// No room now: the reader has to release first.
    Full,
    /// The record can never fit; carries the largest payload that can.
    TooLarge { max: u64 },
    /// The reader's cursor is impossible.
    Corrupt(Corrupt),
}

/// A reserved, contiguous range in the data area, not yet visible to the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reservation {
    /// Where the record (its header) starts.
    pub(crate) start: u64,
    /// Payload bytes reserved.
    pub(crate) len: u64,
    /// Whether the record goes to offset 0 (the buffer inverts on commit).
    pub(crate) wrap: bool,
}

/// A reservation to be filled in place, prepared by [`WriterCore::prepare`] so that committing
/// all of it reads nothing of the writer's state before its one cursor store.
///
/// A grant may be filled with tens of megabytes, after which the writer's own fields, the
/// record's header and the control block have all left this core's caches and TLB. The
/// plain [`WriterCore::commit`] stores the header and reads the writer's fields before `W`,
/// and `W`, stored after them, waited for each miss. Here the header is written before the
/// fill, and `W`'s value and address come from the grant, which lives on the caller's stack:
/// the handoff benchmark's 50 MiB median went from about 1150 to 910 ns and its 1 MiB one from
/// 395 to 242 ns (8 launches of each build, alternating). Copies ([`WriterCore::commit`]) keep
/// the header store after the payload: with it moved to the reservation for them too,
/// 256-byte records lost 10 to 40% of their throughput in alternating runs (not pinned down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// The reservation; its header already holds `len`.
    pub(crate) res: Reservation,
    /// `W` after a commit of all `len` bytes: `start` plus the framed size.
    end: u64,
    /// `L` to store before `W`: the `W` before a wrap, unless `L` already holds it (a
    /// buffer of equal records wraps at the same place every lap, and not storing `L` again
    /// leaves its line valid in the reader's cache).
    watermark: Option<u64>,
    /// `W` in the control block (valid for the core's life).
    cursor: NonNull<crate::sync::AtomicU64>,
    /// The commit mark's word (right after the framed record) if the grant was announced. Its
    /// address is kept, not its offset: the commit then reads nothing of the writer's state
    /// before the mark, whose fields a large fill has evicted.
    mark_at: Option<NonNull<core::sync::atomic::AtomicU64>>,
    /// The mark to store there (see [`Announced`]).
    mark: u64,
    /// The announcement's sequence word, `4k + 2`.
    grant_seq: u64,
}

#[cfg(test)]
impl Prepared {
    /// Whether committing this grant stores `L`.
    pub(crate) fn stores_watermark(&self) -> bool {
        self.watermark.is_some()
    }
}

impl Prepared {
    /// Whether the grant was announced and commits with a mark.
    #[inline(always)]
    pub(crate) fn is_marked(&self) -> bool {
        self.mark_at.is_some()
    }
}

// SAFETY: `cursor` and `mark_at` point at an atomic in the control block and a word of the
// data area of the core that made the grant, which is `Send`; moving the grant to another
// thread moves no access but those two atomics'.
unsafe impl Send for Prepared {}

/// A committed record found by the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Record {
    /// Offset of the payload in the data area.
    pub(crate) payload: u64,
    /// Payload length.
    pub(crate) len: u64,
}

/// Validated geometry shared by both cores.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    /// Data-area bytes.
    pub(crate) capacity: u64,
    /// Record alignment (a power of two, at least 8).
    pub(crate) align: u64,
    /// Header bytes before each payload.
    pub(crate) header: u64,
    /// The largest framed record (header + padded payload) that is accepted: half the
    /// capacity, because a record of at most that size always finds contiguous room once the
    /// reader has caught up, wherever the cursors stand.
    pub(crate) max_framed: u64,
}

impl Geometry {
    /// Checks a capacity and an alignment (the caller checked the memory behind them).
    pub(crate) fn new(capacity: u64, align: u64) -> Result<Geometry, Corrupt> {
        if !super::layout::ALIGNMENTS.contains(&align) {
            return Err(Corrupt {
                what: "record alignment",
                value: align,
                expected: "8, 64 or 4096",
            });
        }
        let header = header_len(align);
        if !capacity.is_multiple_of(align) || capacity < 4 * header || capacity > MAX_CAPACITY {
            return Err(Corrupt {
                what: "capacity",
                value: capacity,
                expected: "a multiple of the alignment, at least 4 record headers, at most 2^48",
            });
        }
        let max_framed = (capacity / 2) & !(align - 1);
        Ok(Geometry {
            capacity,
            align,
            header,
            max_framed,
        })
    }

    /// Checks a cursor read from shared memory (hostile input): `0 ..= capacity`, and a
    /// multiple of the alignment, as every record boundary is (a reader or a writer taking
    /// over starts at the cursor it finds, and turns it into the offset of an 8-byte atomic
    /// word).
    #[inline]
    pub(crate) fn cursor(&self, what: &'static str, value: u64) -> Result<u64, Corrupt> {
        if value > self.capacity || value & (self.align - 1) != 0 {
            return Err(Corrupt {
                what,
                value,
                expected: "at most the capacity, a multiple of the alignment",
            });
        }
        Ok(value)
    }

    /// The largest payload a record may carry.
    pub(crate) fn max_payload(&self) -> u64 {
        self.max_framed - self.header
    }

    /// Header + payload padded to the alignment, if acceptable.
    #[inline]
    fn framed(&self, len: u64) -> Option<u64> {
        let total = round_up(len, self.align)?.checked_add(self.header)?;
        (total <= self.max_framed).then_some(total)
    }
}

/// The largest data area: keeps every cursor sum far from overflow.
pub(crate) const MAX_CAPACITY: u64 = 1 << 48;

/// The writing side. Owns `W` and `L`.
#[derive(Debug)]
pub(crate) struct WriterCore {
    ctl: NonNull<StreamControl>,
    data: NonNull<u8>,
    geo: Geometry,
    /// Our copy of `W`: we are its only writer. Ahead of the shared `W` while records written
    /// with [`WriterCore::commit_deferred`] wait for [`WriterCore::flush`].
    write: u64,
    /// Framed bytes committed but not yet published (see [`WriterCore::commit_deferred`]); 0
    /// when the shared `W` equals ours.
    pub(crate) deferred: u64,
    /// The last `R` we loaded; `R` only moves forward (mod wrap), so a stale value only
    /// understates the room.
    cached_read: u64,
    /// Our copy of `L`: we are its only writer.
    watermark: u64,
    /// Wake syscalls made for a parked reader (diagnostics).
    pub(crate) wakes: u64,
    /// Where the writer prefers to wrap while its reader keeps up (see [`HOT_WINDOW`]); none
    /// until [`WriterCore::set_window`].
    window: Option<u64>,
    /// The next `W` at which the writer considers wrapping early (`u64::MAX`: never).
    next_check: u64,
    /// Grants announced so far (the `k` of the announcement's sequence word).
    grants: u64,
    /// Mixed into every mark (see [`mark_value`]).
    mark_key: u64,
    /// Grants of at least this many bytes are announced ([`MARK_FROM`]).
    pub(crate) mark_from: u64,
}

// SAFETY: the core is a set of pointers into memory that outlives it (see `new`) and is only
// touched through atomics and through ranges the SPSC protocol gives to this side.
unsafe impl Send for WriterCore {}

impl WriterCore {
    /// # Safety
    /// `ctl` and `data .. data + geo.capacity` are valid for reads and writes for the core's
    /// whole life, `data` is aligned to `geo.align`, and no other `WriterCore` exists for the
    /// same memory while this one does.
    pub(crate) unsafe fn new(
        ctl: NonNull<StreamControl>,
        data: NonNull<u8>,
        geo: Geometry,
    ) -> Result<WriterCore, Corrupt> {
        let mut core = WriterCore {
            ctl,
            data,
            geo,
            write: 0,
            deferred: 0,
            cached_read: 0,
            watermark: 0,
            wakes: 0,
            window: None,
            next_check: u64::MAX,
            grants: 0,
            // Where this process mapped the stream: differs between writers, which is all a
            // key needs (it only keeps stale bytes from looking like a mark).
            mark_key: (ctl.as_ptr() as u64).rotate_left(32) ^ data.as_ptr() as u64,
            mark_from: MARK_FROM,
        };
        // Acquire: pairs with the reader's release of `R` (its reads are done) and, on a
        // takeover, with nothing else: `W` is ours from here on.
        core.write = core.ctl().write.0.cursor.load(Ordering::Acquire);
        geo.cursor("write cursor", core.write)?;
        core.cached_read = core.load_read()?;
        // Relaxed: we are `L`'s only writer from here on; a value out of range is only ever
        // compared with, and replaced at the next wrap.
        core.watermark = core.ctl().watermark.0.load(Ordering::Relaxed);
        core.finish_announced()?;
        Ok(core)
    }

    /// On a takeover, completes a grant whose mark the previous writer stored before it died
    /// without storing `W`: a reader may already hold that record, so `W` moves past it.
    fn finish_announced(&mut self) -> Result<(), Corrupt> {
        // Relaxed: only its `k` is used here; `Announced::load` reads it again with Acquire.
        self.grants = self.ctl().write.0.grant_seq.load(Ordering::Relaxed) / 4;
        let Some(a) = Announced::load(&self.ctl().write.0, &self.geo) else {
            return Ok(());
        };
        // SYNC POINT: Acquire pairs with the Release store of the mark in `WriterCore::mark`.
        let m = self.word(a.at).load(core::sync::atomic::Ordering::Acquire);
        let Some((_, framed)) = a.committed(&self.geo, m, || self.word(a.start))? else {
            return Ok(()); // never committed
        };
        if self.write == a.base {
            let wrap = a.start == 0 && a.base != 0;
            if wrap {
                self.store_watermark(a.base);
            }
            let cursor = NonNull::from(&self.ctl().write.0.cursor);
            self.publish_write(cursor, a.start + framed, wrap);
        }
        // Relaxed: the grant is settled; a reader seeing the old value finds its mark taken or
        // its base passed.
        self.ctl()
            .write
            .0
            .grant_seq
            .store(a.seq | 3, Ordering::Relaxed);
        Ok(())
    }

    #[inline(always)]
    fn ctl(&self) -> &StreamControl {
        // SAFETY: valid for the core's life (contract of `new`).
        unsafe { self.ctl.as_ref() }
    }

    /// The geometry.
    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geo
    }

    #[inline]
    fn load_read(&self) -> Result<u64, Corrupt> {
        // SYNC POINT: Acquire pairs with the reader's Release store of `R` in `publish`: the
        // reader's reads of the bytes below `R` happen before we overwrite them. (As the
        // re-check after `announce`, it is ordered by that fence.)
        let r = self.ctl().read.0.load(Ordering::Acquire);
        // Hostile input: `R` is written by another process.
        self.geo.cursor("read cursor", r)?;
        Ok(r)
    }

    /// Where the writer prefers to wrap while its reader keeps up (`None`, 0, or at least the
    /// capacity: only at the end). A policy of this side only: the reader follows `L`
    /// wherever it is.
    pub(crate) fn set_window(&mut self, window: Option<u64>) {
        self.window = window.filter(|&w| w > 0 && w < self.geo.capacity);
        self.next_check = self.window.map_or(u64::MAX, |w| w.max(self.write));
    }

    /// Whether a record of `total` bytes goes to offset 0 although it fits at `W`, which is at
    /// or past the window. Asked once per quarter window from the window on (`R` is read
    /// afresh each time, a stale one understates how close the reader is): the writer wraps
    /// when the reader is at most half a window behind, so that what lies between them stays
    /// small and the room before `R` is large. The data before the wrap (`L = W`) then spans
    /// at least the window, so a reader that stalls right after still has about a window of
    /// backlog before the writer has to wait.
    #[cold]
    #[inline(never)]
    fn wrap_early(&mut self, total: u64) -> bool {
        let Some(window) = self.window else {
            return false;
        };
        let w = self.write;
        self.next_check = w.saturating_add(window / 4);
        // A corrupt `R` is not used here; the caller's `fit` goes on with the last good one,
        // and the next reload reports it.
        let Ok(r) = self.load_read() else {
            return false;
        };
        self.cached_read = r;
        w >= r && w - r <= window / 2 && total < r && self.geo.capacity - w >= total
    }

    /// Where a framed record of `total` bytes goes with cursors `w` and `r`, if it fits.
    #[inline(always)]
    fn fit(&self, total: u64, r: u64) -> Option<(u64, bool)> {
        let w = self.write;
        if w >= r {
            // Not inverted: room from W to the end, else from 0 to R (strictly below R, so that
            // W never lands on R and the buffer never looks empty).
            if self.geo.capacity - w >= total {
                Some((w, false))
            } else if total < r {
                Some((0, true))
            } else {
                None
            }
        } else if r - w > total {
            // Inverted: room from W to R, strictly.
            Some((w, false))
        } else {
            None
        }
    }

    /// Reserves room for a payload of `len` bytes.
    #[inline]
    pub(crate) fn try_reserve(&mut self, len: u64) -> Result<Reservation, ReserveError> {
        let total = self.geo.framed(len).ok_or(ReserveError::TooLarge {
            max: self.geo.max_payload(),
        })?;
        if self.write >= self.next_check && self.wrap_early(total) {
            return Ok(Reservation {
                start: 0,
                len,
                wrap: true,
            });
        }
        if let Some((start, wrap)) = self.fit(total, self.cached_read) {
            return Ok(Reservation { start, len, wrap });
        }
        self.cached_read = self.load_read().map_err(ReserveError::Corrupt)?;
        match self.fit(total, self.cached_read) {
            Some((start, wrap)) => Ok(Reservation { start, len, wrap }),
            None => Err(ReserveError::Full),
        }
    }

    /// Prepares a reservation from [`WriterCore::try_reserve`] for a fill in place: writes
    /// its header, announces it if it is large (see [`Announced`]), and records what its
    /// commit stores (see [`Prepared`]).
    #[inline]
    pub(crate) fn prepare(&mut self, res: Reservation) -> Prepared {
        self.header(res.start)
            .store(res.len.to_le(), core::sync::atomic::Ordering::Relaxed);
        let framed = self
            .geo
            .framed(res.len)
            .expect("a reservation's length was accepted");
        let end = res.start + framed;
        let mut p = Prepared {
            res,
            end,
            watermark: (res.wrap && self.watermark != self.write).then_some(self.write),
            cursor: NonNull::from(&self.ctl().write.0.cursor),
            mark_at: None,
            mark: 0,
            grant_seq: 0,
        };
        // The mark's word must be free room: it is below `R` when the record wraps or the
        // buffer is inverted (`fit` left the record ending strictly below it, and both are
        // multiples of 8), and otherwise needs 8 bytes before the end.
        let inverted = res.wrap || self.write < self.cached_read;
        if res.len >= self.mark_from && (inverted || end <= self.geo.capacity - 8) {
            self.announce(&mut p);
        }
        p
    }

    /// Publishes grant `p` on `W`'s line (a seqlock write) and gives it its mark.
    #[cold]
    #[inline(never)]
    fn announce(&mut self, p: &mut Prepared) {
        // Wrapping: `k` came from shared memory on a takeover, and may be anything.
        self.grants = self.grants.wrapping_add(1);
        let k = self.grants;
        let line = &self.ctl().write.0;
        p.mark = mark_value(k, self.mark_key);
        let word = self.word(p.end);
        p.grant_seq = k.wrapping_mul(4).wrapping_add(2);
        // Not a mark: clears what an earlier lap left there, and brings the word's page and
        // line to this core now, so that the commit finds both at hand.
        word.store(0, core::sync::atomic::Ordering::Relaxed);
        p.mark_at = Some(NonNull::from(word));
        // Relaxed, then the fence: a reader that sees any field below sees this odd value in
        // its re-read (the fence pairs with the reader's Acquire fence in `Announced::load`).
        line.grant_seq.store(p.grant_seq - 1, Ordering::Relaxed);
        crate::sync::fence(Ordering::Release);
        line.grant_base.store(self.write, Ordering::Relaxed);
        line.grant_start.store(p.res.start, Ordering::Relaxed);
        line.grant_len.store(p.res.len, Ordering::Relaxed);
        line.grant_mark.store(p.mark, Ordering::Relaxed);
        // SYNC POINT: Release pairs with the Acquire load in `Announced::load`.
        line.grant_seq.store(p.grant_seq, Ordering::Release);
    }

    /// The length word of the record at `start`, which `fit` placed inside the data area.
    #[inline(always)]
    fn header(&self, start: u64) -> &core::sync::atomic::AtomicU64 {
        self.word(start)
    }

    /// The 8-byte word at offset `at` of the data area: a record's header, or a grant's mark.
    #[inline(always)]
    fn word(&self, at: u64) -> &core::sync::atomic::AtomicU64 {
        debug_assert!(at.is_multiple_of(8) && at + 8 <= self.geo.capacity);
        // SAFETY: every caller passes a multiple of 8 with `at + 8 <= capacity`: a record's
        // start placed by `fit` (0 always has room for a header), or the word after a framed
        // record that `prepare` checked, or `Announced::load` validated, to lie before the end.
        // The data area is valid for the core's life (contract of `new`).
        unsafe { data_word(self.data, at) }
    }

    /// Parks until a payload of `len` bytes may fit, at most `timeout` (the caller loops on
    /// `try_reserve`). The re-check reads `R` afresh after announcing.
    pub(crate) fn park_for_room(
        &mut self,
        len: u64,
        timeout: Option<Duration>,
    ) -> Result<Parked, Corrupt> {
        let ctl = self.ctl;
        // SAFETY: the control block is valid for the core's life (contract of `new`); the
        // reference is used only within this call.
        let word = unsafe { &ctl.as_ref().writer_wait.0 };
        park(word, timeout, || {
            self.cached_read = self.load_read()?;
            Ok(self
                .geo
                .framed(len)
                .is_some_and(|t| self.fit(t, self.cached_read).is_some()))
        })
    }

    /// Whether the reader announced that it sleeps (it may be on its way in or out).
    #[inline]
    pub(crate) fn reader_parked(&self) -> bool {
        // Relaxed: a hint for how to wait, never for correctness.
        self.ctl().reader_wait.0.waiting.load(Ordering::Relaxed) != 0
    }

    /// Whether the reader has released everything committed (reads `R` afresh).
    pub(crate) fn is_drained(&self) -> bool {
        self.load_read().is_ok_and(|r| r == self.write)
    }

    /// Wakes a reader parked on an empty stream (the writer is closing).
    pub(crate) fn wake_reader(&self) {
        self.ctl().reader_wait.0.wake();
    }

    /// The payload bytes of a reservation.
    #[inline(always)]
    pub(crate) fn payload_ptr(&self, res: &Reservation) -> *mut u8 {
        // SAFETY: `start + header + len <= capacity` was established by `fit`, so the offset is
        // inside the data area (contract of `new`).
        unsafe {
            self.data
                .as_ptr()
                .add((res.start + self.geo.header) as usize)
        }
    }

    /// Publishes the first `used` bytes of a reservation (`used <= res.len`), with every
    /// deferred record before it. Returns whether the reader was parked and has been woken.
    #[inline]
    pub(crate) fn commit(&mut self, res: Reservation, used: u64) -> bool {
        self.commit_deferred(res, used);
        self.flush()
    }

    /// As [`WriterCore::commit`], but leaves `W` where it is: the record becomes visible with
    /// the next store of `W` ([`WriterCore::flush`], or any later commit, since `W` covers
    /// everything before it). Many records then cost the reader one load of `W`'s line, and
    /// the writer one store to it, instead of one each per record. The caller flushes before
    /// it waits for room (the reader cannot free room it has not been shown) and before a
    /// [`WriterCore::prepare`] (an announcement records the published `W`).
    #[inline]
    pub(crate) fn commit_deferred(&mut self, res: Reservation, used: u64) {
        debug_assert!(used <= res.len);
        let used = used.min(res.len);
        self.header(res.start)
            .store(used.to_le(), core::sync::atomic::Ordering::Relaxed);
        if res.wrap {
            // Relaxed, as in `commit`: published by the Release store of the `W` that covers
            // this record. A reader that sees `L` early ignores it: it reads `L` only after an
            // inverted `W`.
            self.store_watermark(self.write);
            if let Some(window) = self.window {
                self.next_check = window;
            }
        }
        let framed = self
            .geo
            .framed(used)
            .expect("used <= reserved, which was accepted");
        self.deferred += framed;
        self.write = res.start + framed;
    }

    /// Publishes every record committed with [`WriterCore::commit_deferred`] (one store of
    /// `W`) and wakes a parked reader. Returns whether it woke one.
    #[inline]
    pub(crate) fn flush(&mut self) -> bool {
        if self.deferred == 0 {
            return false;
        }
        let cursor = NonNull::from(&self.ctl().write.0.cursor);
        self.publish_write(cursor, self.write, false)
    }

    /// As [`WriterCore::commit`], for a prepared reservation: a commit of all of it stores `W`
    /// (after `L` if that changes) and reads only `p` first.
    #[inline]
    pub(crate) fn commit_prepared(&mut self, p: &Prepared, used: u64) -> bool {
        let w = self.mark(p, used);
        self.publish_prepared(p, w)
    }

    /// The second half of [`WriterCore::commit_prepared`]: stores `L` if it changes and `W =
    /// w` (from [`WriterCore::mark`]), wakes a parked reader, and settles the announcement.
    #[inline]
    pub(crate) fn publish_prepared(&mut self, p: &Prepared, w: u64) -> bool {
        if let Some(l) = p.watermark {
            self.store_watermark(l);
        }
        let woke = self.publish_write(p.cursor, w, p.res.wrap);
        if p.is_marked() {
            // Relaxed: settles the announcement; a reader that still sees it pending finds the
            // mark taken (or its base passed), as a takeover writer does.
            self.ctl()
                .write
                .0
                .grant_seq
                .store(p.grant_seq | 3, Ordering::Relaxed);
        }
        woke
    }

    /// The first half of [`WriterCore::commit_prepared`]: rewrites the header of a shorter
    /// commit and stores the mark of an announced grant. Returns the `W` to store.
    #[inline]
    pub(crate) fn mark(&mut self, p: &Prepared, used: u64) -> u64 {
        debug_assert!(used <= p.res.len);
        let w = if used < p.res.len {
            self.header(p.res.start)
                .store(used.to_le(), core::sync::atomic::Ordering::Relaxed);
            let framed = self
                .geo
                .framed(used)
                .expect("used <= reserved, which was accepted");
            p.res.start + framed
        } else {
            p.end
        };
        if let Some(word) = p.mark_at {
            let m = p.mark | u64::from(used < p.res.len);
            // SAFETY: set by `announce` to a word of this core's data area, valid for the core's
            // life (contract of `new`).
            let word = unsafe { word.as_ref() };
            // SYNC POINT: Release pairs with the reader's Acquire load of the mark in
            // `ReaderCore::take_marked` (and a takeover writer's in `finish_announced`): the
            // payload and a rewritten header are visible before the mark.
            word.store(m, core::sync::atomic::Ordering::Release);
        }
        w
    }

    /// Stores `L` (before the `W` that inverts the buffer).
    #[inline(always)]
    fn store_watermark(&mut self, l: u64) {
        // Relaxed: published by the caller's store of `W` (Release half), which the reader
        // loads with Acquire before it reads `L`.
        self.ctl().watermark.0.store(l, Ordering::Relaxed);
        self.watermark = l;
    }

    /// Stores `W = w` through `cursor`, which points at this core's `W`, and wakes a parked
    /// reader.
    #[inline(always)]
    fn publish_write(
        &mut self,
        cursor: NonNull<crate::sync::AtomicU64>,
        w: u64,
        wrapped: bool,
    ) -> bool {
        // SAFETY: `cursor` points into this core's control block (taken from it by `commit` or
        // by `prepare`, the only maker of a `Prepared`), valid for the core's life (contract
        // of `new`).
        let cursor = unsafe { cursor.as_ref() };
        // SYNC POINT: Release pairs with the reader's Acquire load of `W` in `load_write` (the
        // header, payload and `L` are visible before `W`). The fence in `wake_if_waiting` then
        // orders this store before the load of the reader's `waiting` flag.
        cursor.store(w, Ordering::Release);
        self.write = w;
        self.deferred = 0;
        if wrapped && let Some(window) = self.window {
            self.next_check = window;
        }
        let woke = self.ctl().reader_wait.0.wake_if_waiting();
        self.wakes += u64::from(woke);
        woke
    }
}

/// The reading side. Owns `R`.
#[derive(Debug)]
pub(crate) struct ReaderCore {
    ctl: NonNull<StreamControl>,
    data: NonNull<u8>,
    geo: Geometry,
    /// `R` as last published.
    read: u64,
    /// Where the next unread record starts: `read` plus whatever has been handed out and not
    /// yet released (a batch), possibly wrapped to 0.
    pos: u64,
    /// The end of what the caller has released (given back by [`ReaderCore::release`]):
    /// between `read` and `pos`. Only this much may be published: records handed out and
    /// still held (a batch being read) stay the reader's.
    released: u64,
    /// The last `W` we loaded.
    cached_write: u64,
    /// Bytes the last load of `W` revealed (`u64::MAX` when it wrapped or nothing is known).
    gain: u64,
    /// Framed bytes handed out since `R` was last published.
    unreleased: u64,
    /// `release` publishes `R` once this many bytes are unreleased (an eighth of the
    /// capacity) or when the reader has caught up; [`ReaderCore::publish`] always does.
    release_every: u64,
    /// Times this reader found the stream empty (wrapping), for [`IDLE_PREFETCH`].
    idle: u32,
    /// Set when a record was taken by its mark before the writer stored `W` past it: the `W`
    /// it was taken at, which `W` may still show. While set, `R` is not published, so that
    /// `W` cannot come back to this value (it never lands on `R` from below).
    lead: Option<u64>,
    /// The announced grant this reader watches (taken from `W`'s line when its sequence word
    /// changes), if it is for the reader's position and passed validation.
    grant: Option<Announced>,
    /// The sequence word `grant` was read at.
    grant_seq: u64,
    /// Wake syscalls made for a parked writer (diagnostics).
    pub(crate) wakes: u64,
}

// SAFETY: as for WriterCore.
unsafe impl Send for ReaderCore {}

impl ReaderCore {
    /// # Safety
    /// As [`WriterCore::new`], for the reading side.
    pub(crate) unsafe fn new(
        ctl: NonNull<StreamControl>,
        data: NonNull<u8>,
        geo: Geometry,
    ) -> Result<ReaderCore, Corrupt> {
        let mut core = ReaderCore {
            ctl,
            data,
            geo,
            read: 0,
            pos: 0,
            released: 0,
            cached_write: 0,
            gain: u64::MAX,
            unreleased: 0,
            release_every: (geo.capacity / 8).max(1),
            idle: 0,
            lead: None,
            grant: None,
            grant_seq: 0,
            wakes: 0,
        };
        // Acquire: on a takeover, the previous reader's `R` (its last release) is where we go on.
        let r = core.ctl().read.0.load(Ordering::Acquire);
        geo.cursor("read cursor", r)?;
        core.read = r;
        core.pos = r;
        core.released = r;
        core.cached_write = r;
        Ok(core)
    }

    #[inline(always)]
    fn ctl(&self) -> &StreamControl {
        // SAFETY: valid for the core's life (contract of `new`).
        unsafe { self.ctl.as_ref() }
    }

    /// The geometry.
    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geo
    }

    #[inline]
    fn load_write(&mut self) -> Result<u64, Corrupt> {
        // SYNC POINT: Acquire pairs with the writer's Release store of `W` in `commit`. (As the
        // re-check after `announce`, it is ordered by that fence.)
        let w = self.ctl().write.0.cursor.load(Ordering::Acquire);
        // Hostile input: `W` is written by another process.
        self.geo.cursor("write cursor", w)?;
        if let Some(before) = self.lead {
            if w == before {
                // The writer has not yet stored `W` past the record we took by its mark.
                return Ok(self.pos);
            }
            self.lead = None;
        }
        if w != self.pos {
            // `W` moved past our position: the grant announced there, if we watched one, was
            // committed (or abandoned for another record), and its record is read through
            // `W`; its mark must not give it a second time. Cleared whichever look loaded `W`
            // (`try_next`, or `has_data` in a park's re-check, which left `try_next` to start
            // from the new `W` and never reach a clear of its own).
            self.grant = None;
        }
        self.gain = if w >= self.cached_write {
            w - self.cached_write
        } else {
            u64::MAX
        };
        self.cached_write = w;
        Ok(w)
    }

    /// Whether every record up to the last `W` loaded was handed out (so the next look loads
    /// `W`) and that load revealed fewer than `bytes`.
    #[inline]
    pub(crate) fn used_up_little(&self, bytes: u64) -> bool {
        self.pos == self.cached_write && self.gain < bytes
    }

    /// Whether a record is ready now, reading `W` afresh.
    pub(crate) fn has_data(&mut self) -> Result<bool, Corrupt> {
        Ok(self.load_write()? != self.pos)
    }

    /// Parks until a record may be ready, at most `timeout` (the caller loops on `try_next`).
    /// Publishes every release first: a sleeping reader holds nothing back.
    pub(crate) fn park_for_data(&mut self, timeout: Option<Duration>) -> Result<Parked, Corrupt> {
        self.publish();
        let ctl = self.ctl;
        // SAFETY: the control block is valid for the core's life (contract of `new`); the
        // reference is used only within this call.
        let word = unsafe { &ctl.as_ref().reader_wait.0 };
        // Also ready when the re-check finds `W` past a record taken by its mark (`lead`):
        // `R` was held back for it, and the writer may be waiting for that room.
        park(word, timeout, || {
            Ok(self.has_data()? || (self.lead.is_none() && self.released != self.read))
        })
    }

    /// Wakes a writer parked on a full stream (the reader is leaving).
    pub(crate) fn wake_writer(&self) {
        self.ctl().writer_wait.0.wake();
    }

    /// The next committed record, advancing past it (it stays readable until [`release`]).
    ///
    /// [`release`]: ReaderCore::release
    #[inline]
    pub(crate) fn try_next(&mut self) -> Result<Option<Record>, Corrupt> {
        let mut w = self.cached_write;
        if self.pos == w {
            w = self.load_write()?;
            if self.pos == w {
                // Found empty: give back everything released so far before the caller waits,
                // so that a lazy release can never hold a writer back while this side idles.
                // (Records handed out and still held, such as a batch being gathered, are
                // not released yet and stay.)
                self.publish();
                self.watch_announced();
                if let Some(rec) = self.take_marked()? {
                    return Ok(Some(rec));
                }
                self.idle = self.idle.wrapping_add(1);
                if self.idle.is_multiple_of(IDLE_PREFETCH) {
                    self.prefetch_next_header();
                }
                return Ok(None);
            }
        }
        let end = if w > self.pos {
            w
        } else {
            // Inverted: the data before the wrap ends at `L`. Relaxed: ordered after our
            // Acquire load of `W`, which the writer stored after `L`.
            let l = self.ctl().watermark.0.load(Ordering::Relaxed);
            // Hostile input: `L` must lie between our position and the capacity.
            if l < self.pos || l > self.geo.capacity {
                return Err(Corrupt {
                    what: "watermark",
                    value: l,
                    expected: "between the read position and the capacity",
                });
            }
            if l == self.pos {
                // Everything before the wrap is consumed: go on at offset 0.
                self.pos = 0;
                if w == 0 {
                    return Err(Corrupt {
                        what: "write cursor",
                        value: 0,
                        expected: "above 0 after a wrap",
                    });
                }
                w
            } else {
                l
            }
        };
        let room = end - self.pos;
        if room < self.geo.header {
            return Err(Corrupt {
                what: "record position",
                value: self.pos,
                expected: "a whole record header before the end of the data",
            });
        }
        // `pos + 8 <= end <= capacity` (checked above) and `pos` is a multiple of the alignment
        // (every record's framed size is). Relaxed: ordered after our Acquire load of `W`.
        let len = u64::from_le(
            self.word(self.pos)
                .load(core::sync::atomic::Ordering::Relaxed),
        );
        let framed = match self.geo.framed(len) {
            Some(f) if f <= room => f,
            _ => {
                return Err(Corrupt {
                    what: "record length",
                    value: len,
                    expected: "a record that ends before the end of the committed data",
                });
            }
        };
        let rec = Record {
            payload: self.pos + self.geo.header,
            len,
        };
        if framed <= READ_AHEAD {
            self.prefetch(self.pos + READ_AHEAD, framed, end);
        }
        self.pos += framed;
        self.unreleased += framed;
        Ok(Some(rec))
    }

    /// On an empty stream: the announced grant at our position if its mark shows that it is
    /// committed, taken before the writer's `W` says so (see [`Announced`]).
    #[inline]
    fn take_marked(&mut self) -> Result<Option<Record>, Corrupt> {
        let Some(a) = self.grant else {
            return Ok(None);
        };
        if a.base != self.pos {
            // Announced at a position this reader has left (its record was read through `W`
            // since): never taken again by its mark.
            self.grant = None;
            return Ok(None);
        }
        // SYNC POINT: Acquire pairs with the Release store of the mark in `WriterCore::mark`:
        // the payload (and the header of a shorter commit) are visible after it.
        let m = self.word(a.at).load(core::sync::atomic::Ordering::Acquire);
        let Some((len, framed)) = a.committed(&self.geo, m, || self.word(a.start))? else {
            return Ok(None);
        };
        self.grant = None;
        self.lead = Some(self.pos);
        self.pos = a.start + framed;
        self.cached_write = self.pos;
        self.unreleased += framed;
        Ok(Some(Record {
            payload: a.start + self.geo.header,
            len,
        }))
    }

    /// On an empty stream: watches the grant announced on `W`'s line if it changed, unless a
    /// record taken by its mark is still ahead of `W`.
    #[inline]
    fn watch_announced(&mut self) {
        if self.lead.is_some() {
            return;
        }
        // Relaxed: a cheap look for a change; `Announced::load` reads it again with Acquire.
        let seq = self.ctl().write.0.grant_seq.load(Ordering::Relaxed);
        if seq != self.grant_seq {
            self.grant_seq = seq;
            self.grant = self.watch_grant();
        }
    }

    /// The announcement on `W`'s line if it is one this reader may take by its mark: pending,
    /// reserved at our position, placed where the writer could place it (at our position or,
    /// wrapping, at 0), and with its mark in free room before the end or before `R`.
    /// Hostile input: anything else is ignored, and `W` alone decides.
    #[cold]
    #[inline(never)]
    fn watch_grant(&self) -> Option<Announced> {
        let a = Announced::load(&self.ctl().write.0, &self.geo)?;
        let wrap = a.start == 0 && self.pos != 0;
        if a.base != self.pos || (!wrap && a.start != self.pos) {
            return None;
        }
        // Where free room ends: `R` when the buffer is inverted or the record wraps, else the
        // end of the data (the writer checked the same against its copy of `R`, which is never
        // ahead of ours).
        if wrap && self.pos < self.read {
            return None;
        }
        let limit = if wrap || self.pos < self.read {
            self.read
        } else {
            self.geo.capacity
        };
        (a.at + 8 <= limit).then_some(a)
    }

    /// The 8-byte word at offset `at` of the data area.
    #[inline(always)]
    fn word(&self, at: u64) -> &core::sync::atomic::AtomicU64 {
        debug_assert!(at.is_multiple_of(8) && at + 8 <= self.geo.capacity);
        // SAFETY: callers pass a record start with a whole header before the end of the data
        // (checked in `try_next`) or a grant's record start or mark, which `Announced::load`
        // validated to lie, aligned, with 8 bytes before the end. The data area is valid for
        // the core's life (contract of `new`).
        unsafe { data_word(self.data, at) }
    }

    /// Asks the CPU to load the header lines where the next record can start: at our position,
    /// or at 0 if the writer wraps. A hint: no memory is accessed.
    #[cold]
    #[inline(never)]
    fn prefetch_next_header(&self) {
        self.prefetch_line(self.pos);
        self.prefetch_line(0);
    }

    /// Asks the CPU to start loading the `len` bytes at `from`, as far as they lie in whole
    /// cache lines of committed data (below `end`, rounded down to a line, so that the line
    /// the writer is still filling is never pulled from it). A hint: no memory is accessed.
    #[inline(always)]
    fn prefetch(&self, from: u64, len: u64, end: u64) {
        let stop = (from + len).min(end & !(LINE - 1));
        let mut line = from & !(LINE - 1);
        while line < stop {
            self.prefetch_line(line);
            line += LINE;
        }
    }

    /// Asks the CPU to load the line at offset `at`. A hint: no memory is accessed.
    #[inline(always)]
    fn prefetch_line(&self, at: u64) {
        // Only an address is computed (`wrapping_add`): the callers keep `at` inside the data
        // area anyway, and a prefetch of any address is harmless.
        let p = self.data.as_ptr().wrapping_add(at as usize);
        // SAFETY: `prefetcht0` needs SSE, which every x86-64 CPU has; it reads no memory and
        // never faults, whatever the address.
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
        };
        #[cfg(any(not(target_arch = "x86_64"), miri))]
        let _ = p;
    }

    /// The payload bytes of a record returned by [`ReaderCore::try_next`].
    #[inline(always)]
    pub(crate) fn payload_ptr(&self, rec: &Record) -> *const u8 {
        // SAFETY: `payload + len <= capacity`, validated in `try_next`.
        unsafe { self.data.as_ptr().add(rec.payload as usize) }
    }

    /// Gives every record handed out so far back to the writer, lazily while a backlog lasts:
    /// the cursor store is made at once when this reader has caught up with the last `W` it
    /// saw, or once an eighth of the capacity is unreleased; otherwise it waits for a later
    /// release or for [`ReaderCore::publish`], which runs whenever the reader finds the stream
    /// empty and when it leaves. Returns whether the writer was woken.
    ///
    /// Storing `R` for every record made the writer (which polls `R` while the stream is
    /// full) and the reader trade its cache line on every message. A *parked* writer waits
    /// for the same threshold (the hysteresis of a socket's write space): waking it as soon
    /// as one record was released made every futex round trip, and the machine barrier of
    /// every park, move one record once the stream ran full.
    #[inline]
    pub(crate) fn release(&mut self) -> bool {
        self.released = self.pos;
        if self.unreleased < self.release_every && self.pos != self.cached_write {
            return false;
        }
        self.publish()
    }

    /// Whether a record we took by its mark still waits for the writer's store of `W` past it
    /// (see `lead`), which [`ReaderCore::publish`] waits for before it gives anything back.
    /// Looks at `W` again; a bad `W` ends the wait (`false`: the next `try_next` reports it).
    pub(crate) fn lead_pending(&mut self) -> bool {
        self.lead.is_some() && self.load_write().is_ok() && self.lead.is_some()
    }

    /// Gives every released record back to the writer now, with one cursor store. Returns
    /// whether the writer was parked and has been woken.
    #[inline]
    pub(crate) fn publish(&mut self) -> bool {
        if self.released == self.read {
            return false;
        }
        // A record taken by its mark is given back only once `W` is past it (see `lead`);
        // the writer stores `W` right after the mark, so one look usually finds it there. A
        // bad `W` is reported by the next `try_next`.
        if self.lead.is_some() && (self.load_write().is_err() || self.lead.is_some()) {
            return false;
        }
        // SYNC POINT: Release pairs with the writer's Acquire load of `R` in `load_read` (our
        // reads of the records happen before it reuses their bytes). The fence in
        // `wake_if_waiting` then orders this store before the load of the writer's flag.
        self.ctl().read.0.store(self.released, Ordering::Release);
        self.read = self.released;
        self.unreleased = 0;
        let woke = self.ctl().writer_wait.0.wake_if_waiting();
        self.wakes += u64::from(woke);
        woke
    }
}
