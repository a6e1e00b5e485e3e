//! The ring over raw memory: a fenced seqlock per slot (the kernel's seqcount, with the stamp
//! beside the value and the sequence number inside the stamp), Disruptor-style gating
//! sequences for backpressure. Knows nothing of where its memory lives.
//!
//! Every field is an atomic, so that a value written by another process (or a hostile one) is
//! at worst a wrong number, never a data race; stamps are only compared and slot indices are
//! always `seq & mask`, so no value read from the memory ever indexes anything.

// The shared-memory side (inline topics) is not compiled under loom or without std.
#![cfg_attr(any(loom, not(feature = "std")), allow(dead_code))]

use crate::sync::{AtomicU32, AtomicU64, Ordering, fence};
use core::mem::{MaybeUninit, size_of};
use core::ptr::{self, NonNull};

/// The cache line size the layout pads to (x86-64 and most AArch64 cores; 128-byte-line
/// machines still work, with some false sharing between adjacent fields).
pub(crate) const LINE: usize = 64;

/// A gate that belongs to no subscriber.
pub(crate) const GATE_FREE: u64 = u64::MAX;

/// Header flag: the cursor is a claim counter shared by several producers.
pub(crate) const FLAG_MPMC: u64 = 1;
/// Header flag: the publisher waits for gated subscribers.
pub(crate) const FLAG_BOUNDED: u64 = 2;

/// Largest capacity accepted (2^40 slots): keeps `2 * seq + 2` far from overflow for any
/// realistic run. It does not bound the memory size: for a large `T`, a ring of this many
/// slots does not fit in `isize` (`ring::build` checks).
pub(crate) const MAX_CAPACITY: u64 = 1 << 40;

/// Payloads of this many bytes or more are copied into and out of a slot with [`bulk_copy`]
/// instead of one atomic word at a time (which compiles to one 8-byte move per word: a
/// kilobyte took 128 stores and 128 loads, where a bulk copy moves a line per instruction).
const BULK_MIN: usize = 128;

/// Whether [`bulk_copy`] exists on this target (x86-64, outside miri and loom, which see the
/// word-by-word atomic copy instead, as does a build with `--cfg weft_word_copy`: the
/// ThreadSanitizer run, whose `memcpy` interceptor would see the seqlock's racing copy as a
/// plain access and report the race the stamps exist to detect).
const BULK: bool = cfg!(all(
    target_arch = "x86_64",
    not(miri),
    not(loom),
    not(weft_word_copy)
));

/// Copies `n` bytes from `src` to `dst`: the C library's `memcpy`, called from inline
/// assembly. A slot's payload may be written by one side while the other copies it: that is
/// the seqlock's race, which the stamps detect (a reader keeps a copy only if the slot's stamp
/// did not change around it). Called from assembly, the copy is opaque to the compiler and
/// does what a sequence of relaxed atomic byte loads and stores of the same bytes would do, so
/// in the language's terms the racing accesses are atomic, as the word-by-word copy's are
/// (`memcpy` called from Rust would be a non-atomic access, a data race by the letter); what
/// the hardware lets a racing reader see is at worst torn bytes, which the re-check throws
/// away. Both sides of a slot split it the same way, by the ring's value size `n` alone
/// (`Shape::bulk_words`: the bulk copy takes the first `8 * floor(n / 8)` bytes of a value of
/// 128 bytes or more, relaxed atomic words the rest), whatever part of the value a side
/// copies: a read of a value's first bytes copies those that lie in the bulk words in bulk
/// (by [`small_copy`] when they are few). So no bulk access races with an atomic word access
/// of the same bytes. `memcpy` rather than `rep movsb`: on this project's hosts the library's
/// vector copy moves a kilobyte in about half the time.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of `n` bytes, and they do not overlap.
#[cfg(all(target_arch = "x86_64", not(miri), not(loom), not(weft_word_copy)))]
#[inline(always)]
unsafe fn bulk_copy(dst: *mut u8, src: *const u8, n: usize) {
    unsafe extern "C" {
        // The C library's own signature (a declaration with other pointer types trips the
        // `suspicious_runtime_symbol_definitions` lint of newer compilers). Only its address
        // is used, by the call below.
        fn memcpy(
            dst: *mut core::ffi::c_void,
            src: *const core::ffi::c_void,
            n: usize,
        ) -> *mut core::ffi::c_void;
    }
    // SAFETY: the caller guarantees both ranges, as `memcpy` requires. The call follows the C
    // ABI: arguments in rdi, rsi, rdx, every caller-saved register clobbered
    // (`clobber_abi`), the stack aligned for a call (the compiler guarantees that at an asm
    // block without `nostack`, which also keeps the red zone free), and the direction flag
    // clear (Rust guarantees it on entry to an asm block; `memcpy` leaves it clear).
    unsafe {
        core::arch::asm!(
            "call {f}",
            f = sym memcpy,
            in("rdi") dst,
            in("rsi") src,
            in("rdx") n,
            clobber_abi("C"),
        );
    }
}

/// [`bulk_copy`] for a few bytes (a read of a large value's first bytes, its header say):
/// eight at a time, then one at a time, by moves in inline assembly, without `memcpy`'s call.
/// Opaque to the compiler as `bulk_copy`'s call is, and for the same reason no data race: the
/// moves do what relaxed atomic byte loads and stores of the same bytes would do.
///
/// # Safety
/// As [`bulk_copy`].
#[cfg(all(target_arch = "x86_64", not(miri), not(loom), not(weft_word_copy)))]
#[inline(always)]
unsafe fn small_copy(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller guarantees both ranges; the loop reads `src .. src + n` and writes
    // `dst .. dst + n`, nothing else, and touches only the registers named here.
    unsafe {
        core::arch::asm!(
            "2:",
            "cmp {n}, 8",
            "jb 3f",
            "mov {t}, qword ptr [{s}]",
            "mov qword ptr [{d}], {t}",
            "add {s}, 8",
            "add {d}, 8",
            "sub {n}, 8",
            "jmp 2b",
            "3:",
            "test {n}, {n}",
            "jz 4f",
            "mov {t:l}, byte ptr [{s}]",
            "mov byte ptr [{d}], {t:l}",
            "inc {s}",
            "inc {d}",
            "dec {n}",
            "jmp 3b",
            "4:",
            s = inout(reg) src => _,
            d = inout(reg) dst => _,
            n = inout(reg) n => _,
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// Never called: [`BULK`] is false on these targets.
#[cfg(not(all(target_arch = "x86_64", not(miri), not(loom), not(weft_word_copy))))]
#[inline(always)]
unsafe fn bulk_copy(_dst: *mut u8, _src: *const u8, _n: usize) {
    unreachable!("bulk_copy without BULK")
}

/// Never called: [`BULK`] is false on these targets.
#[cfg(not(all(target_arch = "x86_64", not(miri), not(loom), not(weft_word_copy))))]
#[inline(always)]
unsafe fn small_copy(_dst: *mut u8, _src: *const u8, _n: usize) {
    unreachable!("small_copy without BULK")
}

/// Slots of 8-byte values written with one 16-byte store each: the build's part
/// ([`pairs::BUILT`]) and the processor's ([`pairs::atomic`]).
///
/// Built on x86-64 with std, outside miri, loom and the ThreadSanitizer build
/// (`weft_word_copy`), which see the fenced seqlock instead. An aligned 16-byte store is
/// single-copy atomic, for cacheable memory, on every processor that enumerates AVX by
/// Intel's and AMD's manuals: Intel for `MOVDQA` and its VEX.128 and EVEX.128 forms (SDM
/// vol. 3A, "Guaranteed Atomic Operations"), AMD for any naturally aligned 16-byte load or
/// store (APM vol. 2, 7.3.2 "Access Atomicity"); GCC's and LLVM's 16-byte atomic loads and
/// stores rest on the same guarantee. Other vendors are not asked.
#[cfg(all(
    target_arch = "x86_64",
    feature = "std",
    not(any(miri, loom, weft_word_copy))
))]
mod pairs {
    use super::done;
    use core::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_loadu_si128, _mm_set_epi64x, _mm_set1_epi64x,
        _mm_unpackhi_epi64, _mm_unpacklo_epi64,
    };

    /// This build has [`write_run`].
    pub(super) const BUILT: bool = true;

    /// Whether this processor makes an aligned 16-byte store atomic (see the module). Asked
    /// once per process (CPUID's vendor string, and AVX enabled by the processor and the
    /// operating system), then cached.
    #[inline]
    pub(super) fn atomic() -> bool {
        use std::sync::atomic::{AtomicU8, Ordering as O};
        // 0: not asked yet; 1: no; 2: yes. Relaxed: every thread computes the same answer.
        static ANSWER: AtomicU8 = AtomicU8::new(0);
        match ANSWER.load(O::Relaxed) {
            1 => false,
            2 => true,
            _ => {
                // CPUID leaf 0 (the vendor string) exists on every x86-64 processor.
                let id = core::arch::x86_64::__cpuid(0);
                let mut vendor = [0u8; 12];
                vendor[..4].copy_from_slice(&id.ebx.to_le_bytes());
                vendor[4..8].copy_from_slice(&id.edx.to_le_bytes());
                vendor[8..].copy_from_slice(&id.ecx.to_le_bytes());
                let yes = matches!(&vendor, b"GenuineIntel" | b"AuthenticAMD")
                    && std::arch::is_x86_feature_detected!("avx");
                ANSWER.store(if yes { 2 } else { 1 }, O::Relaxed);
                yes
            }
        }
    }

    /// One aligned 16-byte store of `x` at `slot`.
    ///
    /// # Safety
    /// `slot` is 16-aligned and valid for writes of 16 bytes, accessed only atomically.
    #[inline(always)]
    unsafe fn store(slot: *const u8, x: __m128i) {
        // SAFETY: the caller's contract (`movdqa` faults unless aligned). In assembly, the
        // store is opaque to the compiler and a barrier to it; in the language's terms it does
        // what relaxed atomic stores of the two words would, and the processor makes it one
        // access where `atomic` holds.
        unsafe {
            core::arch::asm!(
                "movdqa xmmword ptr [{p}], {x}",
                p = in(reg) slot,
                x = in(xmm_reg) x,
                options(nostack, preserves_flags),
            );
        }
    }

    /// Writes the 8-byte `values` (as bytes, `8 * n` of them) as sequences `seq ..` into the
    /// `n` consecutive 16-byte slots from `slot` (a stamp, then the payload word): each slot
    /// with one store of its final stamp and its value, two slots per loaded pair of values.
    /// Returns the sequence after the last one written.
    ///
    /// # Safety
    /// The `n` slots from `slot` are 16-aligned, valid for writes and accessed only
    /// atomically (stamp and payload word), and [`atomic`] returned true.
    #[inline(always)]
    pub(super) unsafe fn write_run(mut slot: *const u8, mut seq: u64, values: &[u8]) -> u64 {
        debug_assert_eq!(values.len() % 8, 0, "whole words");
        // The stamps of the next two slots, and their step per pair.
        // SAFETY: SSE2 (these intrinsics only compute in registers) is part of every x86-64
        // processor.
        let (mut stamps, step) = unsafe {
            (
                _mm_set_epi64x(done(seq + 1) as i64, done(seq) as i64),
                _mm_set1_epi64x(4),
            )
        };
        let mut pairs = values.chunks_exact(16);
        for pair in &mut pairs {
            // SAFETY: `pair` holds 16 readable bytes (an unaligned load); SSE2, as above.
            let v = unsafe { _mm_loadu_si128(pair.as_ptr().cast()) };
            // SAFETY: the caller's slots, in order (the pointer ends one past the last, never
            // written); the unpacks are SSE2, as above.
            unsafe {
                store(slot, _mm_unpacklo_epi64(stamps, v));
                store(slot.add(16), _mm_unpackhi_epi64(stamps, v));
                slot = slot.add(32);
            }
            // SAFETY: SSE2, as above.
            stamps = unsafe { _mm_add_epi64(stamps, step) };
        }
        seq += (values.len() / 16 * 2) as u64;
        if let [w0, w1, w2, w3, w4, w5, w6, w7] = *pairs.remainder() {
            let w = u64::from_ne_bytes([w0, w1, w2, w3, w4, w5, w6, w7]);
            // SAFETY: as above, for the last slot (its stamp, then its value).
            unsafe { store(slot, _mm_set_epi64x(w as i64, done(seq) as i64)) };
            seq += 1;
        }
        seq
    }
}

/// This build has no 16-byte slot stores (see the other `pairs`).
#[cfg(not(all(
    target_arch = "x86_64",
    feature = "std",
    not(any(miri, loom, weft_word_copy))
)))]
mod pairs {
    pub(super) const BUILT: bool = false;

    pub(super) fn atomic() -> bool {
        false
    }

    /// Never called: [`BUILT`] is false.
    pub(super) unsafe fn write_run(_slot: *const u8, _seq: u64, _values: &[u8]) -> u64 {
        unreachable!("pairs::write_run without BUILT")
    }
}

/// One field on its own cache line, so that writers of different fields do not contend.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Padded<T>(pub(crate) T);

/// The geometry, written once by the creator before the memory is shared, then read-only.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Geometry {
    /// Number of slots, a power of two in `2 ..= MAX_CAPACITY`.
    pub(crate) capacity: AtomicU64,
    /// `size_of::<T>()` of the value type, in bytes.
    pub(crate) value_size: AtomicU64,
    /// Payload words per slot: `ceil(value_size / 8)`.
    pub(crate) words: AtomicU64,
    /// Bytes from one slot to the next (`Shape::stride_of` the value size: a power of two, at
    /// least 16).
    pub(crate) stride: AtomicU64,
    /// Number of gate entries after the header.
    pub(crate) gates: AtomicU64,
    /// `FLAG_MPMC | FLAG_BOUNDED`.
    pub(crate) flags: AtomicU64,
    /// Slots a bounded publisher keeps free ahead of the slowest gated subscriber.
    pub(crate) watermark: AtomicU64,
}

/// Wake-up words, the publisher count and the gate bookkeeping. `waiters` and `notify`, which
/// the publisher reads after every message, are written by subscribers only when they park
/// and by the publisher only when someone parked; the other fields change on a clone or drop
/// of a publisher (`publishers`), a join (`gates_used`) or a gate scan (`limit_bound`), none
/// of them per message, so the line stays shared in the publisher's cache between them.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Signal {
    /// Subscribers that announced they are about to park (count, written by subscribers).
    pub(crate) waiters: AtomicU32,
    /// Futex word subscribers park on; the publisher bumps it (wrapping) before a wake.
    pub(crate) notify: AtomicU32,
    /// Publishers of a bounded ring that announced they are about to park.
    pub(crate) pub_waiters: AtomicU32,
    /// Futex word bounded publishers park on; subscribers bump it when they free room.
    pub(crate) pub_notify: AtomicU32,
    /// Live publishers; 0 means closed. Written by publisher handles on clone and drop.
    pub(crate) publishers: AtomicU64,
    /// Gates ever taken (a high-water mark in `0 ..= gates`, only grows): the publisher scans
    /// only these. Written by joining subscribers.
    pub(crate) gates_used: AtomicU64,
    /// An upper bound on every limit a bounded publisher writes up to without scanning the
    /// gates again: each scan raises it (`fetch_max`) to the scanning publisher's sequence plus
    /// its window, before the scan's fence. A subscriber joining from the oldest message reads
    /// it to learn which messages no publisher can overwrite before it sees the new gate
    /// ([`RawRing::gate_limit`]). Written by bounded publishers, once per scan; 0 on lossy
    /// rings.
    pub(crate) limit_bound: AtomicU64,
    /// Gate scans in flight: raised before a scan's fence, lowered once its limit is in
    /// `limit_granted`. A joiner that reads 0 knows the grant of every scan that may have
    /// missed its gate. Written by bounded publishers, twice per scan.
    pub(crate) scans: AtomicU64,
    /// The largest limit any finished scan granted (`fetch_max`): what a publisher may write
    /// up to on a scan's word, where `limit_bound` assumes every gate at the cursor (behind
    /// a gated subscriber that holds a full ring back, a window more). Written by bounded
    /// publishers, once per scan; 0 on lossy rings.
    pub(crate) limit_granted: AtomicU64,
}

/// The ring header, `#[repr(C)]`, at offset 0 of the ring memory:
///
/// | offset | line | field | writer |
/// |---:|---|---|---|
/// | 0 | geometry | capacity, value_size, words, stride, gates, flags, watermark (u64 each) | creator, once |
/// | 64 | cursor | u64: SPMC: sequences below it are published; MPMC: next sequence to claim | publisher(s) |
/// | 128 | signal | waiters u32, notify u32, pub_waiters u32, pub_notify u32, publishers u64, gates_used u64, limit_bound u64, scans u64, limit_granted u64 | see [`Signal`] |
///
/// followed by `capacity` slots of `stride` bytes from byte 192: a u64 stamp and `words` u64
/// payload words from byte [`Shape::lead`] of the slot, then `gates` lines of one u64 each (a
/// gated subscriber's next sequence, or [`GATE_FREE`]; none in shared memory), each written
/// only by the subscriber holding it (its join's CAS and store, `advance_gate`, its drop) and
/// read by publishers in `min_gate`. A stamp is
/// `2 * seq + 1` while `seq` is being written and `2 * seq + 2` once it is complete; 0 means
/// never written. The slots come before the gates so that the header lies at a fixed
/// distance before the first slot: a handle keeps one pointer for both.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Header {
    pub(crate) geometry: Padded<Geometry>,
    pub(crate) cursor: Padded<AtomicU64>,
    pub(crate) signal: Padded<Signal>,
}

/// A subscriber's lap mark before its first lap (see [`resume_after_lap`]).
pub(crate) const NEVER_LAPPED: u64 = u64::MAX;

/// Where a subscriber at `pos` that was lapped goes on, every lossy ring of the crate alike
/// (the broadcast ring, inline topics, block topics); it reports exactly the sequences it
/// jumps over and keeps the result as its new `lap_mark`.
///
/// At `oldest`, where the caller goes on after a single lap: the first sequence the ring may
/// still hold (inline and block topics), or the one after it (the broadcast ring's
/// `Subscriber::lag`, which leaves the oldest to the publisher's next write and counts it as
/// skipped). Unless it was lapped again before it got through half a ring since its previous
/// lap (`lap_mark`): then half a ring further. The slot of the oldest sequence is the next
/// one a publisher writes, so a subscriber slower than its publisher that always went on
/// there was lapped again at once, over and over, and received almost nothing (a lapped
/// inline subscriber across processes got 0.5 Mmsg/s of a publisher's 100+). A single lap (a
/// burst) still keeps the whole ring. Always past `pos`: the subscriber moves forward.
#[inline]
pub(crate) const fn resume_after_lap(oldest: u64, capacity: u64, pos: u64, lap_mark: u64) -> u64 {
    let relapsed = lap_mark != NEVER_LAPPED && pos.saturating_sub(lap_mark) < capacity / 2;
    let to = if relapsed {
        oldest.saturating_add(capacity / 2)
    } else {
        oldest
    };
    if to > pos { to } else { pos + 1 }
}

/// The stamp of a slot whose sequence `seq` is complete.
#[inline(always)]
pub(crate) const fn done(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(2)
}

/// The stamp of a slot whose sequence `seq` is being written.
#[inline(always)]
pub(crate) const fn writing(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(1)
}

/// The stamp of a slot whose sequence `seq` was *voided*: claimed by an MPMC producer that
/// died before writing it, and given up by a survivor (rings in shared memory only; an
/// in-process ring never voids). It lies above `done(seq)`, so the producer of `seq +
/// capacity` may write the slot and a reader lapped past `seq` sees it as overwritten, and
/// below `writing(seq + capacity)`, so a reader of the next lap sees "not yet". No other stamp
/// of the same slot has this value (`2 seq + 3` is odd, and the odd stamps of this slot are
/// `2 (seq + k capacity) + 1` with `capacity >= 2`).
#[inline(always)]
pub(crate) const fn void(seq: u64) -> u64 {
    seq.wrapping_mul(2).wrapping_add(3)
}

/// What a read of one sequence found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read<T> {
    /// The value, copied out whole.
    Value(T),
    /// The sequence has not been (completely) written yet.
    NotYet,
    /// The slot has moved on to a later lap: the sequence was overwritten.
    Overrun,
    /// The sequence was voided ([`void`]): nothing was ever written for it; skip it.
    Void,
}

/// The geometry a caller asks for, checked and rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) capacity: u64,
    pub(crate) value_size: u64,
    pub(crate) gates: u64,
    pub(crate) flags: u64,
    pub(crate) watermark: u64,
}

/// Size of one atomic word in the layout (8 bytes; larger only in the loom model, whose atomics
/// carry bookkeeping).
const WORD: usize = size_of::<AtomicU64>();

impl Shape {
    /// Payload words per slot.
    pub(crate) fn words(&self) -> usize {
        (self.value_size as usize).div_ceil(8)
    }

    /// The leading payload words that every access copies with [`bulk_copy`]: the value's
    /// whole words when it has [`BULK_MIN`] bytes or more (and [`BULK`] holds), else none. The
    /// split depends on the ring's value size alone, so every writer and reader of a slot,
    /// whatever part of the value it copies, splits the slot the same way.
    pub(crate) fn bulk_words(&self) -> usize {
        if BULK && self.value_size as usize >= BULK_MIN {
            self.value_size as usize / 8
        } else {
            0
        }
    }

    /// Bytes from a slot's start to its payload: the stamp's word, or a whole line when the
    /// value has [`BULK_MIN`] bytes or more and the slot (sized by [`Shape::stride`] for the
    /// stamp and the value) has room for a line before the payload. The payload then starts on
    /// a line of its own, so that a bulk copy's vector stores and loads do not straddle lines
    /// (a kilobyte copied to a line's eighth byte took 12.2 ns, to its first 10.0). The rule
    /// depends on the geometry alone, never on the build (`BULK`): every process finds the
    /// payload at the same place.
    pub(crate) fn lead(&self) -> usize {
        let payload = WORD * self.words();
        if self.value_size as usize >= BULK_MIN && LINE + payload <= self.stride() {
            LINE
        } else {
            WORD
        }
    }

    /// Bytes per slot: stamp and payload ([`Shape::stride_of`] the value size).
    pub(crate) fn stride(&self) -> usize {
        Self::stride_of(self.value_size as usize)
    }

    /// Bytes per slot for a value of `value_size` bytes: the smallest power of two that holds
    /// the stamp and the payload, at least 16 bytes. A power of two, so that a slot never
    /// straddles a line when it fits in one (a value of up to 56 bytes shares its stamp's
    /// line) and the slot offset is a shift; a function of the value size alone, so that a
    /// typed handle knows it at compile time ([`RawRing::typed_shift`]). Dense slots (four
    /// `u64` messages per line) write and read fewer lines per message than a line per slot,
    /// which measured slower on every row (`Options` says by how much).
    pub(crate) const fn stride_of(value_size: usize) -> usize {
        let stride = (WORD * (1 + value_size.div_ceil(8))).next_power_of_two();
        if stride < 16 { 16 } else { stride }
    }

    /// Bytes from the ring's base to its first slot: the header's, whatever the gates (they
    /// follow the slots), so that the header lies at a fixed distance before the slots and a
    /// handle reaches both through one pointer.
    const fn slots_offset() -> usize {
        size_of::<Header>().div_ceil(LINE) * LINE
    }

    /// Bytes from the ring's base to the gate table (see [`Shape::checked_layout`]); only
    /// called for a shape whose size was checked (`usize::MAX` otherwise).
    fn gates_offset(&self) -> usize {
        self.checked_layout()
            .and_then(|(gates, _)| usize::try_from(gates).ok())
            .unwrap_or(usize::MAX)
    }

    /// Total bytes of ring memory (header, slots, then the gates from the next line on);
    /// `usize::MAX` for a shape too large to lay out (see [`Shape::checked_bytes`]).
    pub(crate) fn bytes(&self) -> usize {
        self.checked_bytes()
            .and_then(|b| usize::try_from(b).ok())
            .unwrap_or(usize::MAX)
    }

    /// [`Shape::bytes`] in checked arithmetic, `None` when it overflows: `attach` sizes a
    /// geometry read from a mapping with it, where a sum that wrapped would pass its length
    /// check.
    pub(crate) fn checked_bytes(&self) -> Option<u64> {
        self.checked_layout().map(|(_, bytes)| bytes)
    }

    /// The gate table's offset and the ring's total size, `None` when they overflow. The
    /// gates start on the line after the slots (a gate is a 64-aligned type; the slots of a
    /// small ring end mid-line, e.g. 2 slots of 16 bytes). Without gates both are the end of
    /// the slots: no padding (an inline topic's ring in a region ends with its slots,
    /// protocol.md), and no offset past the block, which could not even be formed into a
    /// pointer.
    fn checked_layout(&self) -> Option<(u64, u64)> {
        let slots = self.capacity.checked_mul(self.stride() as u64)?;
        let end = (Self::slots_offset() as u64).checked_add(slots)?;
        if self.gates == 0 {
            return Some((end, end));
        }
        let at = end.checked_next_multiple_of(LINE as u64)?;
        let gates = self
            .gates
            .checked_mul(size_of::<Padded<AtomicU64>>() as u64)?;
        Some((at, at.checked_add(gates)?))
    }
}

/// The ring algorithm over a block of memory laid out as [`Header`] describes. Holds only
/// pointers into the block; whoever made it keeps the block alive (see `Shared`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawRing {
    gates: *const Padded<AtomicU64>,
    /// The first slot; the header lies [`Shape::slots_offset`] bytes before it.
    slots: *const u8,
    mask: u64,
    capacity: u64,
    /// `log2(stride)`.
    shift: u32,
    /// Bytes from a slot's start to its first payload word ([`Shape::lead`]: `WORD` or
    /// `LINE`; four bytes beside `shift`, so that the handle keeps its size).
    lead: u32,
    gate_count: usize,
    /// Payload words per slot (`ceil(value_size / 8)`): the bound of the byte-slice copies.
    words: usize,
    /// Leading payload words copied with [`bulk_copy`] by both sides of a slot
    /// ([`Shape::bulk_words`]); the rest go one atomic word at a time.
    bulk_words: usize,
}

/// Where a validated ring lies relative to its base, so that a handle can rebuild the
/// [`RawRing`] over the same memory without validating the header again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    gates_offset: usize,
    capacity: u64,
    shift: u32,
    lead: u32,
    gate_count: usize,
    words: usize,
    bulk_words: usize,
}

impl RawRing {
    /// Writes a fresh header, free gates and empty slots into `base`.
    ///
    /// # Safety
    /// - `base` is aligned to [`LINE`], valid for reads and writes of `shape.bytes()` bytes, and
    ///   stays so (and is accessed only through `RawRing`s) for as long as any copy of the
    ///   returned value is used;
    /// - nothing else accesses the block during this call;
    /// - `shape.capacity` is a power of two in `2 ..= MAX_CAPACITY`.
    pub(crate) unsafe fn init(base: NonNull<u8>, shape: Shape) -> RawRing {
        debug_assert!(shape.capacity.is_power_of_two() && shape.capacity >= 2);
        let h = base.cast::<Header>().as_ptr();
        let header = Header {
            geometry: Padded(Geometry {
                capacity: AtomicU64::new(shape.capacity),
                value_size: AtomicU64::new(shape.value_size),
                words: AtomicU64::new(shape.words() as u64),
                stride: AtomicU64::new(shape.stride() as u64),
                gates: AtomicU64::new(shape.gates),
                flags: AtomicU64::new(shape.flags),
                watermark: AtomicU64::new(shape.watermark),
            }),
            cursor: Padded(AtomicU64::new(0)),
            signal: Padded(Signal {
                waiters: AtomicU32::new(0),
                notify: AtomicU32::new(0),
                pub_waiters: AtomicU32::new(0),
                pub_notify: AtomicU32::new(0),
                publishers: AtomicU64::new(0),
                gates_used: AtomicU64::new(0),
                limit_bound: AtomicU64::new(0),
                scans: AtomicU64::new(0),
                limit_granted: AtomicU64::new(0),
            }),
        };
        // SAFETY: `base` is aligned and large enough for the header (caller's contract, and
        // `bytes()` starts with it); nothing else accesses the block now.
        unsafe { ptr::write(h, header) };
        let ring = RawRing {
            // SAFETY: both offsets are within `shape.bytes()` (see `Shape::bytes`).
            gates: unsafe { base.as_ptr().add(shape.gates_offset()) }.cast(),
            // SAFETY: as above.
            slots: unsafe { base.as_ptr().add(Shape::slots_offset()) },
            mask: shape.capacity - 1,
            capacity: shape.capacity,
            shift: shape.stride().trailing_zeros(),
            gate_count: shape.gates as usize,
            words: shape.words(),
            bulk_words: shape.bulk_words(),
            lead: shape.lead() as u32,
        };
        for i in 0..ring.gate_count {
            // SAFETY: gate `i < gates` lies within the block, aligned to 64 by construction.
            unsafe {
                ptr::write(
                    ring.gates.add(i).cast_mut(),
                    Padded(AtomicU64::new(GATE_FREE)),
                )
            };
        }
        for i in 0..shape.capacity {
            let slot = ring.slot_ptr(i);
            // The stamp (byte 0), then the payload words from byte `lead` (the padding between
            // them, if any, is never accessed).
            let payload = (0..shape.words()).map(|w| ring.lead as usize + w * WORD);
            for at in core::iter::once(0).chain(payload) {
                // SAFETY: the stamp and each payload word of slot `i < capacity` lie within the
                // block (`lead + words * WORD <= stride`); slots are `stride`-aligned (16 bytes
                // at least, from a 64-aligned first slot) and `lead` is a multiple of 8, so
                // every word is 8-aligned.
                unsafe {
                    ptr::write(
                        slot.add(at).cast::<AtomicU64>().cast_mut(),
                        AtomicU64::new(0),
                    )
                };
            }
        }
        ring
    }

    /// [`init`](RawRing::init) for memory that already holds atomics (a zero-filled or reused
    /// shared mapping that other processes may read at any time): every field is written with
    /// an atomic store, the stamps last-but-one and the geometry first, so a reader that
    /// attaches through an older registration sees at worst "not yet". Publication to other
    /// processes is the caller's (a Release store after this call).
    ///
    /// # Safety
    /// `base` is aligned to [`LINE`], valid for reads and writes of `shape.bytes()` bytes that
    /// are only ever accessed through atomics, for as long as the returned value is used;
    /// `shape.capacity` is a power of two in `2 ..= MAX_CAPACITY`.
    #[cfg(not(loom))]
    pub(crate) unsafe fn init_atomic(base: NonNull<u8>, shape: Shape) -> RawRing {
        debug_assert!(shape.capacity.is_power_of_two() && shape.capacity >= 2);
        // SAFETY: aligned, large enough (caller's contract), and the header is all atomics.
        let h = unsafe { base.cast::<Header>().as_ref() };
        let g = &h.geometry.0;
        // Relaxed throughout: published by the caller's Release store.
        g.capacity.store(shape.capacity, Ordering::Relaxed);
        g.value_size.store(shape.value_size, Ordering::Relaxed);
        g.words.store(shape.words() as u64, Ordering::Relaxed);
        g.stride.store(shape.stride() as u64, Ordering::Relaxed);
        g.gates.store(shape.gates, Ordering::Relaxed);
        g.flags.store(shape.flags, Ordering::Relaxed);
        g.watermark.store(shape.watermark, Ordering::Relaxed);
        h.cursor.0.store(0, Ordering::Relaxed);
        let sig = &h.signal.0;
        sig.waiters.store(0, Ordering::Relaxed);
        sig.notify.store(0, Ordering::Relaxed);
        sig.pub_waiters.store(0, Ordering::Relaxed);
        sig.pub_notify.store(0, Ordering::Relaxed);
        sig.publishers.store(0, Ordering::Relaxed);
        sig.gates_used.store(0, Ordering::Relaxed);
        sig.limit_bound.store(0, Ordering::Relaxed);
        sig.scans.store(0, Ordering::Relaxed);
        sig.limit_granted.store(0, Ordering::Relaxed);
        let ring = RawRing {
            // SAFETY: both offsets are within `shape.bytes()` (see `Shape::bytes`).
            gates: unsafe { base.as_ptr().add(shape.gates_offset()) }.cast(),
            // SAFETY: as above.
            slots: unsafe { base.as_ptr().add(Shape::slots_offset()) },
            mask: shape.capacity - 1,
            capacity: shape.capacity,
            shift: shape.stride().trailing_zeros(),
            gate_count: shape.gates as usize,
            words: shape.words(),
            bulk_words: shape.bulk_words(),
            lead: shape.lead() as u32,
        };
        for i in 0..ring.gate_count {
            ring.gate(i).store(GATE_FREE, Ordering::Relaxed);
        }
        for i in 0..shape.capacity {
            let slot = ring.slot_ptr(i);
            ring.stamp(slot).store(0, Ordering::Relaxed);
            for w in 0..shape.words() {
                ring.word(slot, w).store(0, Ordering::Relaxed);
            }
        }
        ring
    }

    /// The header's `publishers` word of the ring whose memory starts at `base` (a ring in
    /// shared memory with one publisher at a time uses it as that publisher's lease).
    ///
    /// # Safety
    /// `base` is aligned to [`LINE`] and valid for reads and writes of a [`Header`] that is
    /// only accessed through atomics, for `'a`.
    pub(crate) unsafe fn publishers_word<'a>(base: NonNull<u8>) -> &'a AtomicU64 {
        // SAFETY: the caller's contract; the header is all atomics.
        &unsafe { base.cast::<Header>().as_ref() }
            .signal
            .0
            .publishers
    }

    /// The ring's flags (`FLAG_*`), as written in its geometry.
    pub(crate) fn flags(&self) -> u64 {
        // Relaxed: written before the ring was shared; callers only compare it.
        self.header().geometry.0.flags.load(Ordering::Relaxed)
    }

    /// The ring's watermark, as written in its geometry.
    pub(crate) fn watermark(&self) -> u64 {
        // Relaxed: written before the ring was shared; callers only compare it.
        self.header().geometry.0.watermark.load(Ordering::Relaxed)
    }

    /// Attaches to memory that another party initialised, validating the geometry against
    /// the length of the block and the value size and flags the caller expects (each field
    /// read once: the stride is computed from the value size that was checked, so a typed
    /// access with a `T` of that size addresses the same slots, see `typed_slot_ptr`).
    ///
    /// # Errors
    /// [`Error::Corrupt`](crate::Error::Corrupt) when any header field is impossible.
    ///
    /// # Safety
    /// `base` is aligned to [`LINE`], valid for reads and writes of `len` bytes for as long as
    /// any copy of the returned value is used, and accessed only through atomics.
    pub(crate) unsafe fn attach(
        base: NonNull<u8>,
        len: usize,
        value_size: u64,
        flags: u64,
        name: &str,
    ) -> crate::Result<RawRing> {
        use crate::Error;
        if len < size_of::<Header>() {
            return Err(Error::corrupt(
                name,
                "ring length",
                len as u64,
                "at least a header",
            ));
        }
        // SAFETY: the block holds at least a header (checked above) and is aligned.
        let h = unsafe { base.cast::<Header>().as_ref() };
        let g = &h.geometry.0;
        // Relaxed: the geometry was written before the block was shared (the sharing itself,
        // a mapping or an Arc, orders it); every value is checked before use.
        let capacity = g.capacity.load(Ordering::Relaxed);
        if !capacity.is_power_of_two() || !(2..=MAX_CAPACITY).contains(&capacity) {
            return Err(Error::corrupt(
                name,
                "capacity",
                capacity,
                "a power of two in 2..=2^40",
            ));
        }
        let vs = g.value_size.load(Ordering::Relaxed);
        if vs != value_size {
            return Err(Error::corrupt(
                name,
                "value size",
                vs,
                "the size of the value type",
            ));
        }
        let gates = g.gates.load(Ordering::Relaxed);
        if gates > 4096 {
            return Err(Error::corrupt(name, "gate count", gates, "at most 4096"));
        }
        let f = g.flags.load(Ordering::Relaxed);
        if f != flags {
            return Err(Error::corrupt(name, "ring flags", f, "the ring's kind"));
        }
        let shape = Shape {
            capacity,
            value_size: vs,
            gates,
            flags,
            watermark: g.watermark.load(Ordering::Relaxed),
        };
        let words = g.words.load(Ordering::Relaxed);
        if words != shape.words() as u64 {
            return Err(Error::corrupt(
                name,
                "word count",
                words,
                "ceil(value size / 8)",
            ));
        }
        let stride = g.stride.load(Ordering::Relaxed);
        if stride != shape.stride() as u64 {
            return Err(Error::corrupt(
                name,
                "stride",
                stride,
                "the slot size for the value",
            ));
        }
        // Checked: the capacity comes from the mapping, and a size that wrapped would pass the
        // check below.
        let need = shape.checked_bytes().unwrap_or(u64::MAX);
        if need > len as u64 {
            return Err(Error::corrupt(
                name,
                "ring size",
                need,
                "within the mapping",
            ));
        }
        Ok(RawRing {
            // SAFETY: within `len`, checked above.
            gates: unsafe { base.as_ptr().add(shape.gates_offset()) }.cast(),
            // SAFETY: within `len`, checked above.
            slots: unsafe { base.as_ptr().add(Shape::slots_offset()) },
            mask: capacity - 1,
            capacity,
            shift: shape.stride().trailing_zeros(),
            gate_count: gates as usize,
            words: shape.words(),
            bulk_words: shape.bulk_words(),
            lead: shape.lead() as u32,
        })
    }

    /// Where this ring lies relative to `base` (the pointer it was made from).
    pub(crate) fn placement(&self) -> Placement {
        Placement {
            gates_offset: self.gates as usize - self.base() as usize,
            capacity: self.capacity,
            shift: self.shift,
            gate_count: self.gate_count,
            words: self.words,
            bulk_words: self.bulk_words,
            lead: self.lead,
        }
    }

    /// Rebuilds a ring from a [`Placement`] taken from a ring over the same memory.
    ///
    /// # Safety
    /// `base` points to the memory that the ring `p` came from was made over (by `init` or a
    /// successful `attach`), and that memory satisfies the contract of `attach` for as long as
    /// the returned value is used.
    #[inline(always)]
    pub(crate) unsafe fn at(base: NonNull<u8>, p: Placement) -> RawRing {
        RawRing {
            // SAFETY: `gates_offset` lies within the memory (it did for the ring `p` came from).
            gates: unsafe { base.as_ptr().add(p.gates_offset) }.cast(),
            // SAFETY: as above.
            slots: unsafe { base.as_ptr().add(Shape::slots_offset()) },
            mask: p.capacity - 1,
            capacity: p.capacity,
            shift: p.shift,
            gate_count: p.gate_count,
            words: p.words,
            bulk_words: p.bulk_words,
            lead: p.lead,
        }
    }

    /// The start of the ring memory: the header, [`Shape::slots_offset`] bytes before the
    /// first slot (computed from the slot pointer, which every access loads anyway, so that
    /// reaching the cursor costs no second pointer load).
    #[inline(always)]
    fn base(&self) -> *const u8 {
        // SAFETY: `slots` was made as `base + Shape::slots_offset()` (init, attach, at), so
        // this goes back to `base`, within the same allocation.
        unsafe { self.slots.sub(Shape::slots_offset()) }
    }

    /// The header.
    #[inline(always)]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: `base` is the start of the ring memory, aligned to LINE, which holds the
        // header and outlives every use of this RawRing (contract of init/attach/at).
        unsafe { &*self.base().cast::<Header>() }
    }

    /// The published-cursor (SPMC) or claim counter (MPMC).
    #[inline(always)]
    pub(crate) fn cursor(&self) -> &AtomicU64 {
        &self.header().cursor.0
    }

    /// The wake-up words.
    #[inline(always)]
    pub(crate) fn signal(&self) -> &Signal {
        &self.header().signal.0
    }

    /// Number of slots.
    #[inline(always)]
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Number of gate entries.
    pub(crate) fn gate_count(&self) -> usize {
        self.gate_count
    }

    /// Gate `i`, `i < gate_count()`.
    #[inline(always)]
    pub(crate) fn gate(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.gate_count);
        // SAFETY: `i < gate_count` (asserted); the gate table lies within the block.
        unsafe { &(*self.gates.add(i)).0 }
    }

    #[inline(always)]
    fn slot_ptr(&self, seq: u64) -> *const u8 {
        // SAFETY: `seq & mask < capacity`, so the slot lies within the block.
        unsafe { self.slots.add(((seq & self.mask) as usize) << self.shift) }
    }

    /// `log2` of the stride of a ring of `T` values ([`Shape::stride_of`] its size): the
    /// ring's `shift` when `T` is its value type, as a constant. The typed accesses below
    /// address slots with it instead of the `shift` field: a same-thread publish and receive
    /// took 2.36-2.39 ns with the field and 2.21-2.27 with the constant, publish only
    /// 1.12-1.16 and 1.03-1.10 (lab loops, builds alternating).
    #[inline(always)]
    pub(crate) const fn typed_shift<T>() -> u32 {
        Shape::stride_of(size_of::<T>()).trailing_zeros()
    }

    /// The slot of `seq` in a ring whose value type is `T` (the contract of every typed
    /// access: the ring's value size is `size_of::<T>()`, so its stride is `T`'s).
    #[inline(always)]
    fn typed_slot_ptr<T>(&self, seq: u64) -> *const u8 {
        debug_assert_eq!(
            self.shift,
            Self::typed_shift::<T>(),
            "T is the ring's value type"
        );
        // SAFETY: `seq & mask < capacity`, and `T`'s stride is the ring's (the ring was laid
        // out, or attached and validated, for a value of `size_of::<T>()` bytes), so the slot
        // lies within the block.
        unsafe {
            self.slots
                .add(((seq & self.mask) as usize) << Self::typed_shift::<T>())
        }
    }

    #[inline(always)]
    fn stamp(&self, slot: *const u8) -> &AtomicU64 {
        // SAFETY: `slot` comes from `slot_ptr`; the stamp is its first word, an initialised atomic.
        unsafe { &*slot.cast::<AtomicU64>() }
    }

    #[inline(always)]
    fn word(&self, slot: *const u8, i: usize) -> &AtomicU64 {
        self.word_at(slot, self.lead as usize, i)
    }

    /// Payload word `i` of `slot` whose payload starts `lead` bytes in: the ring's
    /// [`Shape::lead`], or a constant that equals it (see `typed_lead`).
    #[inline(always)]
    fn word_at(&self, slot: *const u8, lead: usize, i: usize) -> &AtomicU64 {
        // SAFETY: callers pass `i < words` of the slot's value type and the ring's lead, which
        // the geometry sized the slot for (`stride >= lead + words * WORD`, `Shape::lead`).
        unsafe { &*slot.add(lead + WORD * i).cast::<AtomicU64>() }
    }

    /// The payload's offset in a slot for a typed copy of a `size`-byte value
    /// (`size_of::<T>()`, the ring's value size): [`Shape::lead`] gives a value under
    /// [`BULK_MIN`] bytes the stamp's word, so a small `T`'s offset is a constant and its copy
    /// loads no field for it.
    #[inline(always)]
    fn typed_lead(&self, size: usize) -> usize {
        if size >= BULK_MIN {
            self.lead as usize
        } else {
            debug_assert_eq!(
                self.lead as usize, WORD,
                "a small value's payload follows its stamp"
            );
            WORD
        }
    }

    /// The bulk-copied leading words of a typed copy of a `size`-byte value (`size_of::<T>()`):
    /// the slot's split (`Shape::bulk_words`). `T` is the ring's value type, so it covers
    /// `size / 8` words or none. The size test is a constant: a small `T`'s copy has no bulk
    /// path (its ring's `bulk_words` is 0).
    #[inline(always)]
    fn typed_bulk_words(&self, size: usize) -> usize {
        if BULK && size >= BULK_MIN {
            self.bulk_words.min(size / 8)
        } else {
            0
        }
    }

    /// Copies `v` into the slot's payload words (relaxed atomic stores: ordering comes from the
    /// fences around the call). Values of [`BULK_MIN`] bytes or more go in one bulk copy.
    #[inline(always)]
    fn store_value<T: bytemuck::Pod>(&self, slot: *const u8, v: &T) {
        let size = size_of::<T>();
        // The callers' invariant (a ring made or validated for `T`'s size; the shared-memory
        // topics check it when a handle is made), not re-checked on the hot path.
        debug_assert!(
            size <= self.words * WORD,
            "a value larger than the ring's slots"
        );
        let src = (v as *const T).cast::<u8>();
        let full = size / 8;
        let lead = self.typed_lead(size);
        let bulk = self.typed_bulk_words(size);
        if bulk > 0 {
            // SAFETY: the payload words `0 .. bulk` lie within the slot (`words >= full`), the
            // source within `*v`; see `bulk_copy` for why a racing reader is no data race.
            unsafe { bulk_copy(slot.add(lead).cast_mut(), src, bulk * 8) };
        }
        for i in bulk..full {
            // SAFETY: bytes `8i .. 8i + 8` lie within `*v` (i < size / 8).
            let w = unsafe { ptr::read_unaligned(src.add(i * 8).cast::<u64>()) };
            // Relaxed: published by the Release stamp store that follows in `write`.
            self.word_at(slot, lead, i).store(w, Ordering::Relaxed);
        }
        let (full, rem) = (size / 8, size % 8);
        if rem != 0 {
            let mut b = [0u8; 8];
            // SAFETY: the last `rem` bytes of `*v` are in bounds; `b` holds 8.
            unsafe { ptr::copy_nonoverlapping(src.add(full * 8), b.as_mut_ptr(), rem) };
            // Relaxed: as above.
            self.word_at(slot, lead, full)
                .store(u64::from_ne_bytes(b), Ordering::Relaxed);
        }
    }

    /// Copies the slot's payload words out (relaxed atomic loads; the caller validates the copy
    /// with the stamp). Any bit pattern is a valid `T` (Pod), so a torn copy is wrong, not UB.
    /// Values of [`BULK_MIN`] bytes or more come out in one bulk copy.
    #[inline(always)]
    fn load_value<T: bytemuck::Pod>(&self, slot: *const u8) -> T {
        let size = size_of::<T>();
        // As in `store_value`.
        debug_assert!(
            size <= self.words * WORD,
            "a value larger than the ring's slots"
        );
        let mut out = MaybeUninit::<T>::uninit();
        let dst = out.as_mut_ptr().cast::<u8>();
        let full = size / 8;
        let lead = self.typed_lead(size);
        let bulk = self.typed_bulk_words(size);
        if bulk > 0 {
            // SAFETY: as in `store_value`, the other way round; the stamp re-check of the
            // caller decides whether the bytes are used.
            unsafe { bulk_copy(dst, slot.add(lead), bulk * 8) };
        }
        for i in bulk..full {
            // Relaxed: validated by the stamp re-check after the Acquire fence in `read`.
            let w = self.word_at(slot, lead, i).load(Ordering::Relaxed);
            // SAFETY: bytes `8i .. 8i + 8` lie within `out`.
            unsafe { ptr::write_unaligned(dst.add(i * 8).cast::<u64>(), w) };
        }
        let (full, rem) = (size / 8, size % 8);
        if rem != 0 {
            // Relaxed: as above.
            let b = self
                .word_at(slot, lead, full)
                .load(Ordering::Relaxed)
                .to_ne_bytes();
            // SAFETY: the last `rem` bytes of `out` are in bounds; `b` holds 8.
            unsafe { ptr::copy_nonoverlapping(b.as_ptr(), dst.add(full * 8), rem) };
        }
        // SAFETY: every byte of `out` was written above, and `T: Pod` accepts any bytes.
        unsafe { out.assume_init() }
    }

    /// Copies `src` into the slot's payload words, at most `words * 8` bytes (a longer slice is
    /// cut, so the copy never leaves the slot), the last word zero-padded.
    #[inline(always)]
    fn store_bytes(&self, slot: *const u8, src: &[u8]) {
        let src = &src[..src.len().min(self.words * 8)];
        // The slot's split (`Shape::bulk_words`): its bulk words in one copy (as much of them
        // as `src` covers), the rest word by word.
        let b = src.len().min(self.bulk_words * 8);
        if b > 0 {
            // SAFETY: `b <= src.len() <= words * 8`: the bytes lie within the slot; see
            // `bulk_copy` for why a racing reader is no data race.
            unsafe { bulk_copy(slot.add(self.lead as usize).cast_mut(), src.as_ptr(), b) };
            if !b.is_multiple_of(8) {
                // `src` ends inside a bulk word: its last bytes are zeroed, as a word-by-word
                // tail's are below (every caller passes whole values today).
                let zeros = [0u8; 8];
                // SAFETY: bytes `b .. next multiple of 8` lie within the bulk words, hence the
                // slot; `small_copy` is of `bulk_copy`'s kind, as the bulk words' accesses are.
                unsafe {
                    small_copy(
                        slot.add(self.lead as usize + b).cast_mut(),
                        zeros.as_ptr(),
                        8 - b % 8,
                    )
                };
            }
        }
        // Past the bulk words (`b` is their end, a multiple of 8) or at the end of `src`.
        let mut i = b.div_ceil(8);
        let mut chunks = src[b..].chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_ne_bytes(c.try_into().expect("8-byte chunk"));
            // Relaxed: published by the Release stamp store that follows in `write_bytes`.
            self.word(slot, i).store(w, Ordering::Relaxed);
            i += 1;
        }
        let rem = chunks.remainder();
        if !rem.is_empty() {
            let mut b = [0u8; 8];
            b[..rem.len()].copy_from_slice(rem);
            // Relaxed: as above.
            self.word(slot, i)
                .store(u64::from_ne_bytes(b), Ordering::Relaxed);
        }
    }

    /// Copies the slot's payload words into `dst`, at most `words * 8` bytes (relaxed atomic
    /// loads; the caller validates the copy with the stamp).
    #[inline(always)]
    fn load_bytes(&self, slot: *const u8, dst: &mut [u8]) {
        let n = dst.len().min(self.words * 8);
        let dst = &mut dst[..n];
        // As in `store_bytes`: a copy of the value's first bytes (a prefix read) splits the
        // slot as its writer did, never reading bulk-written bytes with an atomic word.
        let b = n.min(self.bulk_words * 8);
        if b >= BULK_MIN {
            // SAFETY: as in `store_bytes`, the other way round; the caller's stamp re-check
            // decides whether the bytes are used.
            unsafe { bulk_copy(dst.as_mut_ptr(), slot.add(self.lead as usize), b) };
        } else if b > 0 {
            // SAFETY: as above (a few bytes of the bulk words: no call for them).
            unsafe { small_copy(dst.as_mut_ptr(), slot.add(self.lead as usize), b) };
        }
        let mut i = b.div_ceil(8);
        let mut chunks = dst[b..].chunks_exact_mut(8);
        for c in &mut chunks {
            // Relaxed: validated by the stamp re-check after the Acquire fence in `read_bytes`.
            c.copy_from_slice(&self.word(slot, i).load(Ordering::Relaxed).to_ne_bytes());
            i += 1;
        }
        let rem = chunks.into_remainder();
        if !rem.is_empty() {
            // Relaxed: as above.
            let b = self.word(slot, i).load(Ordering::Relaxed).to_ne_bytes();
            let k = rem.len();
            rem.copy_from_slice(&b[..k]);
        }
    }

    /// [`write`](RawRing::write) for a value given as bytes (at most the ring's value size;
    /// a longer slice is cut).
    #[inline(always)]
    pub(crate) fn write_bytes(&self, seq: u64, src: &[u8]) {
        let slot = self.slot_ptr(seq);
        let stamp = self.stamp(slot);
        // Relaxed: ordered before the payload stores by the Release fence just below.
        stamp.store(writing(seq), Ordering::Relaxed);
        // Pairs with the Acquire fence in `read_bytes` and `read`, as in `write`.
        fence(Ordering::Release);
        self.store_bytes(slot, src);
        // Pairs with the Acquire stamp load in `read_bytes` and `read`.
        stamp.store(done(seq), Ordering::Release);
    }

    /// [`read`](RawRing::read) into a byte buffer (at most the ring's value size is copied).
    #[inline(always)]
    pub(crate) fn read_bytes(&self, seq: u64, dst: &mut [u8]) -> Read<()> {
        let slot = self.slot_ptr(seq);
        let stamp = self.stamp(slot);
        let want = done(seq);
        // Pairs with the Release stamp store in `write` / `write_bytes`. Only compared.
        let s1 = stamp.load(Ordering::Acquire);
        if s1 == want {
            self.load_bytes(slot, dst);
            // Pairs with the Release fence in `write_bytes`, as in `read`.
            fence(Ordering::Acquire);
            // Relaxed: ordered after the payload loads by the fence above.
            if stamp.load(Ordering::Relaxed) == want {
                Read::Value(())
            } else {
                Read::Overrun
            }
        } else {
            Self::classify(s1, seq)
        }
    }

    /// What a stamp other than `done(seq)` says about `seq`.
    #[inline(always)]
    fn classify<T>(s1: u64, seq: u64) -> Read<T> {
        if s1 < done(seq) {
            Read::NotYet
        } else if s1 == void(seq) {
            Read::Void
        } else {
            Read::Overrun
        }
    }

    /// Claims the next sequence of an MPMC ring (`fetch_add` on the claim counter).
    #[inline(always)]
    pub(crate) fn claim(&self) -> u64 {
        // AcqRel: the Release half publishes whatever the caller stored before the claim (a
        // shared-memory publisher's record of the claim in flight) to anyone who reads the
        // counter with Acquire and finds it past the claimed sequence (the release sequence
        // of the counter carries it through later claims); the Acquire half is not needed by
        // the ring but keeps the claim ordered before the caller's later loads.
        self.cursor().fetch_add(1, Ordering::AcqRel)
    }

    /// The stamp of `seq`'s slot (Acquire: pairs with the Release stamp stores of writers).
    #[inline]
    pub(crate) fn stamp_of(&self, seq: u64) -> u64 {
        // Pairs with the Release stamp stores in `write` / `write_bytes` and the AcqRel CAS in
        // `try_void`.
        self.stamp(self.slot_ptr(seq)).load(Ordering::Acquire)
    }

    /// Voids `seq` if its slot still holds the stamp `seen` (a previous lap's, or `seq`'s own
    /// odd stamp left by a writer that died mid-write). Returns whether this call voided it.
    /// Only a caller that established that no live producer holds `seq` may call this.
    pub(crate) fn try_void(&self, seq: u64, seen: u64) -> bool {
        if seen >= done(seq) {
            return false;
        }
        // AcqRel: Release pairs with the Acquire stamp loads of readers and of the producer of
        // `seq + capacity` (`slot_free`); Acquire orders us after the stamp we replace. Fails
        // if anyone wrote the slot since `seen` was read, so a completed write is never undone.
        self.stamp(self.slot_ptr(seq))
            .compare_exchange(seen, void(seq), Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Writes `v` as sequence `seq`. The caller owns `seq` (the one SPMC publisher, or the
    /// MPMC producer that claimed it, after `MpPublisher::wait_slot`, which waits on
    /// [`RawRing::slot_free`]); breaking that yields a value the
    /// readers detect as overwritten, never undefined behaviour.
    #[inline(always)]
    pub(crate) fn write<T: bytemuck::Pod>(&self, seq: u64, v: &T) {
        self.write_at(self.typed_slot_ptr::<T>(seq), seq, v);
    }

    /// Writes `values` as the sequences `first ..`, at most a lap of them, walking the slots
    /// with a pointer instead of indexing each one (a single publisher's batch; the same
    /// stores, in the same order, as a `write` per sequence).
    ///
    /// Except for 8-byte values on a processor whose aligned 16-byte stores are atomic
    /// ([`pairs::atomic`]): each slot (stamp, then payload word; 16 bytes, 16-aligned) then
    /// takes one store of its final stamp and its value ([`pairs::write_run`]). A reader sees
    /// such a slot before or after the store, never between, so the odd stamp and the fences
    /// of [`write_at`](RawRing::write_at) have nothing left to guard, and a reader of either
    /// kind reads these slots right: `read`'s stamp and payload loads see the store whole or
    /// not at all (x86-64 keeps loads in order), and `read_run`'s one re-check still holds, as
    /// the slots are still written in sequence order (the next lap of the run's first slot
    /// before any later lap of the others).
    #[inline(always)]
    pub(crate) fn write_run<T: bytemuck::Pod>(&self, first: u64, values: &[T]) {
        debug_assert!(values.len() as u64 <= self.capacity, "more than a lap");
        let in_pairs = pairs::BUILT && size_of::<T>() == WORD && pairs::atomic();
        debug_assert!(
            !in_pairs || (self.shift, self.lead) == (4, WORD as u32),
            "an 8-byte value's slot is 16 bytes, its word at byte 8"
        );
        let start = (first & self.mask) as usize;
        // Slots up to the end of the array, then from its start.
        let (a, b) = values.split_at(values.len().min(self.capacity as usize - start));
        let mut seq = first;
        for (part, from) in [(a, start), (b, 0)] {
            // SAFETY: `from < capacity`; the slot array holds `capacity` slots.
            let mut slot = unsafe { self.slots.add(from << self.shift) };
            if in_pairs {
                // SAFETY: the part's slots end at the array's end at the latest: slots of
                // this ring (16 bytes each, 16-aligned in a 64-aligned array), atomics only;
                // `pairs::atomic` holds.
                seq = unsafe { pairs::write_run(slot, seq, bytemuck::cast_slice(part)) };
                continue;
            }
            for v in part {
                self.write_at(slot, seq, v);
                seq += 1;
                // SAFETY: stays within the array or one slot past its end (never written): the
                // part ends at the array's end at the latest.
                slot = unsafe { slot.add(1 << self.shift) };
            }
        }
    }

    /// [`write`](RawRing::write) into `slot`, the slot of `seq` (from `slot_ptr` or a walk
    /// over the array).
    ///
    /// One value of at most 8 bytes could also go in with its final stamp as one aligned
    /// 16-byte store, as a batch does ([`write_run`](RawRing::write_run)), but
    /// moving a value and a stamp from general registers into a vector register costs more
    /// than the stores it saves: measured twice and not kept (docs/benchmarks.md, 2026-12-01
    /// and 2026-12-06; faster publishing on an Intel host, slower publishing and half the
    /// SPSC throughput on an AMD one).
    #[inline(always)]
    fn write_at<T: bytemuck::Pod>(&self, slot: *const u8, seq: u64, v: &T) {
        let stamp = self.stamp(slot);
        // Relaxed: ordered before the payload stores by the Release fence just below.
        stamp.store(writing(seq), Ordering::Relaxed);
        // Pairs with the Acquire fence in `read`: a reader that sees any payload word of this
        // write sees the odd stamp (or later) on its re-check.
        fence(Ordering::Release);
        self.store_value(slot, v);
        // Pairs with the Acquire stamp load in `read`: the payload is visible with the stamp.
        stamp.store(done(seq), Ordering::Release);
    }

    /// Reads sequence `seq`.
    #[inline(always)]
    pub(crate) fn read<T: bytemuck::Pod>(&self, seq: u64) -> Read<T> {
        let slot = self.typed_slot_ptr::<T>(seq);
        let stamp = self.stamp(slot);
        let want = done(seq);
        // Pairs with the Release stamp store in `write`. The stamp is only compared.
        let s1 = stamp.load(Ordering::Acquire);
        if s1 == want {
            let v = self.load_value::<T>(slot);
            // Pairs with the Release fence in `write`: if a payload load saw a later write, the
            // re-check below sees that write's odd stamp.
            fence(Ordering::Acquire);
            // Relaxed: ordered after the payload loads by the fence above.
            if stamp.load(Ordering::Relaxed) == want {
                Read::Value(v)
            } else {
                Read::Overrun
            }
        } else {
            Self::classify(s1, seq)
        }
    }

    /// Copies the run of complete sequences that starts at `start` into `dst`, as many as are
    /// complete and fit, with one stamp check per slot and one re-check for the whole run
    /// (a slot-by-slot [`read`](RawRing::read) checks every stamp twice). For rings with a
    /// single publisher (no [`FLAG_MPMC`]) only: it relies on sequences being written one
    /// after another in order.
    ///
    /// Returns the number copied (0 when `start` is not complete yet), or `None` when the run
    /// cannot be vouched for: the publisher began to overwrite it while it was copied (or
    /// already had). The caller then reads slot by slot, which sorts out what happened.
    ///
    /// Why one re-check suffices: the publisher writes `start + capacity` (the next lap of
    /// `start`'s slot) before any later lap of the run's other slots, and stores that odd
    /// stamp before the Release fence of every later write. A copied payload word that came
    /// from a later lap's write therefore makes that odd stamp (or a later one) visible to the
    /// re-check of `start`'s slot after our Acquire fence. The cursor is not read: it is
    /// written by every publish, and loading it per batch would pull its line away from a
    /// publisher on another core.
    #[inline(always)]
    pub(crate) fn read_run<T: bytemuck::Pod>(&self, start: u64, dst: &mut [T]) -> Option<usize> {
        // At most a lap: further on, the run would meet its own first slot again.
        let len = dst.len().min(self.capacity as usize);
        let dst = &mut dst[..len];
        let Some(last) = (dst.len() as u64).checked_sub(1).map(|k| start + k) else {
            return Some(0);
        };
        // The whole run complete? The publisher completes sequences in order, so when the
        // last one is complete every one before it is (or was overwritten since, which the
        // re-check below catches): the payloads are copied without looking at their stamps.
        // Pairs with the Release stamp store in `write`. Only compared.
        if self
            .stamp(self.typed_slot_ptr::<T>(last))
            .load(Ordering::Acquire)
            == done(last)
        {
            self.copy_run(start, dst);
            return self.run_intact(start, dst.len());
        }
        let mut n = 0;
        for d in dst.iter_mut() {
            let seq = start + n as u64;
            let slot = self.typed_slot_ptr::<T>(seq);
            // Pairs with the Release stamp store in `write`: the payload of `seq` is visible.
            // Only compared.
            if self.stamp(slot).load(Ordering::Acquire) != done(seq) {
                break;
            }
            *d = self.load_value::<T>(slot);
            n += 1;
        }
        if n == 0 {
            return Some(0);
        }
        self.run_intact(start, n)
    }

    /// Copies the payloads of `start .. start + dst.len()` (at most a lap) into `dst`, walking
    /// the slots with a pointer instead of indexing each one.
    #[inline(always)]
    fn copy_run<T: bytemuck::Pod>(&self, start: u64, dst: &mut [T]) {
        let first = (start & self.mask) as usize;
        // Slots up to the end of the array, then from its start.
        let (a, b) = dst.split_at_mut(dst.len().min(self.capacity as usize - first));
        for (part, from) in [(a, first), (b, 0)] {
            // SAFETY: `from < capacity`; the slot array holds `capacity` slots.
            let mut slot = unsafe { self.slots.add(from << self.shift) };
            for d in part.iter_mut() {
                *d = self.load_value::<T>(slot);
                // SAFETY: stays within the array or one slot past its end (never read): the
                // part ends at the array's end at the latest.
                slot = unsafe { slot.add(1 << self.shift) };
            }
        }
    }

    /// `read_run`'s closing check: `Some(n)` when the run's first slot still holds `start`,
    /// so no payload copied before this call came from a later lap.
    #[inline(always)]
    fn run_intact(&self, start: u64, n: usize) -> Option<usize> {
        // Pairs with the Release fence in `write`: if a payload load saw a later lap's write,
        // the re-check below sees that lap's odd stamp of `start`'s slot (or a later stamp).
        fence(Ordering::Acquire);
        // Relaxed: ordered after the payload loads by the fence above.
        if self.stamp(self.slot_ptr(start)).load(Ordering::Relaxed) == done(start) {
            Some(n)
        } else {
            None
        }
    }

    /// Whether `seq` is complete or overwritten (a read would not say `NotYet`).
    #[inline]
    pub(crate) fn ready(&self, seq: u64) -> bool {
        // Acquire pairs with the Release stamp store in `write` (the caller reads next).
        self.stamp(self.slot_ptr(seq)).load(Ordering::Acquire) >= done(seq)
    }

    /// Whether the slot of `seq` has finished its previous lap (`seq - capacity`), so that an
    /// MPMC producer that claimed `seq` may write it.
    #[inline]
    pub(crate) fn slot_free(&self, seq: u64) -> bool {
        if seq < self.capacity {
            return true;
        }
        // Pairs with the Release stamp store of the previous lap's producer, so our writes
        // come after its writes.
        self.stamp(self.slot_ptr(seq)).load(Ordering::Acquire) >= done(seq - self.capacity)
    }

    /// The limit of a bounded publisher at `upto` whose window is `ahead`: the slowest gate
    /// at or below `upto`, plus `ahead`. Tells a subscriber joining from the oldest message,
    /// whose gate this scan may miss, how far the publisher may still write (see
    /// `Subscriber::join`): announces `upto + ahead` (the largest limit this scan can give) in
    /// [`Signal::limit_bound`] and counts itself in [`Signal::scans`] first, and once the
    /// limit is known, records it in [`Signal::limit_granted`] and leaves the count.
    /// `announced` is the largest bound the calling thread announced before (0: none known):
    /// a publisher spinning on a full ring scans again and again at the same `upto`, and
    /// announces only once.
    pub(crate) fn gate_limit(&self, upto: u64, ahead: u64, announced: &mut u64) -> u64 {
        let sig = self.signal();
        let bound = upto.saturating_add(ahead);
        if bound > *announced {
            // Relaxed: ordered before the SeqCst fence in `min_gate`. A joiner whose own fence
            // follows that fence reads this bound or a later one; a joiner whose fence
            // precedes it has its gate seen by the scan. A bound this thread announced before
            // is sequenced before the fence as well.
            sig.limit_bound.fetch_max(bound, Ordering::Relaxed);
            *announced = bound;
        }
        // Relaxed: ordered before the fence in `min_gate`, as the bound: a joiner whose fence
        // follows it reads this count or a later value of it.
        sig.scans.fetch_add(1, Ordering::Relaxed);
        let limit = self.min_gate(upto).saturating_add(ahead);
        // Relaxed: published by the Release decrement below.
        sig.limit_granted.fetch_max(limit, Ordering::Relaxed);
        // SYNC POINT: Release pairs with the Acquire load of `scans` in `Subscriber::join`.
        // Every write of `scans` is an RMW, so a joiner that reads 0 (every scan it counted has
        // left) reads from the release sequence of each of their decrements, and sees their
        // grants.
        sig.scans.fetch_sub(1, Ordering::Release);
        limit
    }

    /// The smallest gate at or below `upto` (`upto` when no gate is set).
    pub(crate) fn min_gate(&self, upto: u64) -> u64 {
        // Pairs with the SeqCst fence in `Subscriber::join`: either we see the new gate, or
        // the joining subscriber sees our cursor and starts at or after it. On an MPMC ring
        // "our cursor" is the claim counter as this thread wrote it (its Relaxed claim) or
        // read it with an RMW (`try_claim`) before this fence: the fences order those Relaxed
        // accesses as well.
        fence(Ordering::SeqCst);
        // Relaxed: ordered by the fence above (the joiner raises it before its own fence).
        // Another process may write it: clamped to the table, only bounds a loop.
        let used = self.signal().gates_used.load(Ordering::Relaxed);
        let used = (used as usize).min(self.gate_count);
        let mut m = upto;
        for i in 0..used {
            // Acquire pairs with the Release gate store after a subscriber's read: its reads of
            // the slots below the gate are done before we overwrite them. Only compared.
            let g = self.gate(i).load(Ordering::Acquire);
            if g < m {
                m = g;
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a ring of `shape` laid out in fresh zeroed heap memory (so that the bytes
    /// the ring never writes read as zero), given with the memory's start; then frees it.
    fn on_fresh_ring(shape: Shape, f: impl FnOnce(&RawRing, NonNull<u8>)) {
        let layout = core::alloc::Layout::from_size_align(shape.bytes(), LINE).unwrap();
        // SAFETY: non-zero size.
        let base = NonNull::new(unsafe { alloc::alloc::alloc_zeroed(layout) }).unwrap();
        // SAFETY: fresh, aligned, large enough, power-of-two capacity.
        let ring = unsafe { RawRing::init(base, shape) };
        f(&ring, base);
        // SAFETY: allocated above with this layout; `f` has returned, no ring is used after.
        unsafe { alloc::alloc::dealloc(base.as_ptr(), layout) };
    }

    #[test]
    fn a_typed_access_uses_the_stride_of_a_ring_shaped_for_its_type() {
        fn check<T>() {
            let s = Shape {
                capacity: 8,
                value_size: size_of::<T>() as u64,
                gates: 0,
                flags: 0,
                watermark: 0,
            };
            assert_eq!(
                1usize << RawRing::typed_shift::<T>(),
                s.stride(),
                "{}",
                core::any::type_name::<T>()
            );
        }
        check::<u8>();
        check::<u64>();
        check::<[u8; 9]>();
        check::<[u64; 7]>();
        check::<[u64; 8]>();
        check::<[u8; 100]>();
        check::<[u8; 1000]>();
    }

    #[test]
    fn layout_is_fixed() {
        #[cfg(not(loom))]
        {
            assert_eq!(size_of::<Header>(), 192);
            assert_eq!(core::mem::offset_of!(Header, cursor), 64);
            assert_eq!(core::mem::offset_of!(Header, signal), 128);
            // The words an inline topic of a shared region uses or leaves zero (protocol.md).
            assert_eq!(core::mem::offset_of!(Signal, publishers), 144 - 128);
            assert_eq!(core::mem::offset_of!(Signal, limit_bound), 160 - 128);
            assert_eq!(core::mem::offset_of!(Signal, limit_granted), 176 - 128);
            let s = Shape {
                capacity: 8,
                value_size: 56,
                gates: 2,
                flags: 0,
                watermark: 0,
            };
            assert_eq!(s.stride(), 64, "a 56-byte value shares the stamp's line");
            let s = Shape {
                capacity: 8,
                value_size: 57,
                gates: 2,
                flags: 0,
                watermark: 0,
            };
            assert_eq!(s.stride(), 128);
            assert_eq!(s.bytes(), 192 + 8 * 128 + 2 * 64);
            // The slots right after the header, the gates after the slots (protocol.md: an
            // inline topic's slots start at byte 192 of its ring).
            assert_eq!(Shape::slots_offset(), 192);
            assert_eq!(s.gates_offset(), 192 + 8 * 128);
            // Slots that end mid-line: the gates start on the next line.
            let s = Shape {
                capacity: 2,
                value_size: 8,
                gates: 1,
                flags: 0,
                watermark: 0,
            };
            assert_eq!(s.gates_offset(), 256, "192 + 2 * 16, up to a line");
            assert_eq!(s.bytes(), 256 + 64);
            let s = Shape { gates: 0, ..s };
            assert_eq!(s.bytes(), 192 + 2 * 16, "no gates, no padding");
            assert_eq!(
                s.gates_offset(),
                s.bytes(),
                "inside the block, an empty table"
            );
        }
    }

    #[test]
    fn a_ring_too_large_to_lay_out_has_no_size() {
        // 2^40 slots of a 2^40-byte value: the slots alone need 2^81 bytes.
        let huge = Shape {
            capacity: MAX_CAPACITY,
            value_size: 1 << 40,
            gates: 0,
            flags: 0,
            watermark: 0,
        };
        assert_eq!(huge.checked_bytes(), None);
        assert_eq!(huge.bytes(), usize::MAX);
        let small = shape_of(8);
        assert_eq!(small.checked_bytes(), Some(small.bytes() as u64));
    }

    #[test]
    fn the_header_is_found_from_the_slots_and_the_gates_follow_them() {
        let shape = Shape {
            capacity: 4,
            value_size: 8,
            gates: 3,
            flags: FLAG_BOUNDED,
            watermark: 0,
        };
        on_fresh_ring(shape, |ring, base| {
            assert_eq!(
                ring.header() as *const Header as usize,
                base.as_ptr() as usize
            );
            assert_eq!(
                ring.cursor() as *const AtomicU64 as usize,
                base.as_ptr() as usize + 64
            );
            let last_gate = ring.gate(2) as *const AtomicU64 as usize;
            assert_eq!(
                last_gate + 64,
                base.as_ptr() as usize + shape.bytes(),
                "the last gate ends the block"
            );
            // Gates and slots do not overlap: writing every gate leaves every slot as it was.
            ring.write(3, &7u64);
            for i in 0..3 {
                ring.gate(i).store(0xdead, Ordering::Relaxed);
            }
            assert_eq!(ring.read::<u64>(3), Read::Value(7));
            assert_eq!(ring.read::<u64>(0), Read::NotYet);
            // A ring rebuilt from its placement finds the same header, slots and gates.
            // SAFETY: the same live block the placement was taken from.
            let again = unsafe { RawRing::at(base, ring.placement()) };
            assert_eq!(again.read::<u64>(3), Read::Value(7));
            assert_eq!(again.gate(1).load(Ordering::Relaxed), 0xdead);
            assert_eq!(
                again.header() as *const Header,
                ring.header() as *const Header
            );
        });
    }

    #[test]
    fn attach_validates_the_header() {
        let shape = Shape {
            capacity: 4,
            value_size: 12,
            gates: 1,
            flags: 0,
            watermark: 0,
        };
        on_fresh_ring(shape, |ring, base| {
            ring.write(0, &[1u32, 2, 3]);
            // SAFETY: the same live block.
            let other = unsafe { RawRing::attach(base, shape.bytes(), 12, 0, "t") }.unwrap();
            assert_eq!(other.read::<[u32; 3]>(0), Read::Value([1, 2, 3]));
            assert_eq!(other.read::<[u32; 3]>(1), Read::NotYet);
            // SAFETY: the same live block.
            assert!(unsafe { RawRing::attach(base, shape.bytes(), 16, 0, "t") }.is_err());
            // SAFETY: the same live block, shorter length given.
            assert!(unsafe { RawRing::attach(base, shape.bytes() - 1, 12, 0, "t") }.is_err());
            // SAFETY: the same live block; other flags expected.
            assert!(unsafe { RawRing::attach(base, shape.bytes(), 12, FLAG_MPMC, "t") }.is_err());
            ring.header()
                .geometry
                .0
                .capacity
                .store(3, Ordering::Relaxed);
            // SAFETY: the same live block.
            let e = unsafe { RawRing::attach(base, shape.bytes(), 12, 0, "t") }.unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
            ring.header()
                .geometry
                .0
                .capacity
                .store(1 << 20, Ordering::Relaxed);
            // SAFETY: the same live block.
            assert!(unsafe { RawRing::attach(base, shape.bytes(), 12, 0, "t") }.is_err());
        });
    }

    /// A shape of `value_size`-byte values, 4 slots, no gates.
    fn shape_of(value_size: u64) -> Shape {
        Shape {
            capacity: 4,
            value_size,
            gates: 0,
            flags: 0,
            watermark: 0,
        }
    }

    #[test]
    #[cfg(not(loom))]
    fn a_large_value_starts_on_its_own_line_when_the_slot_has_room() {
        // (value size, stride, lead): protocol.md, "Inline rings".
        for (m, stride, lead) in [
            (8, 16, 8),
            (56, 64, 8),
            (120, 128, 8),
            (128, 256, 64),
            (192, 256, 64),
            (200, 256, 8),
            (1000, 1024, 8),
            (1024, 2048, 64),
            (1984, 2048, 64),
            (1985, 2048, 8),
            (2040, 2048, 8),
            (4088, 4096, 8),
        ] {
            let s = shape_of(m);
            assert_eq!((s.stride(), s.lead()), (stride, lead), "value of {m} bytes");
            assert!(s.lead() + 8 * s.words() <= s.stride(), "{m} bytes fit");
        }
    }

    #[test]
    #[cfg(not(loom))]
    fn a_large_value_is_written_after_its_slots_first_line() {
        let shape = shape_of(1024);
        on_fresh_ring(shape, |ring, base| {
            let value: Vec<u8> = (0..1024u32).map(|i| (i % 251 + 1) as u8).collect();
            ring.write_bytes(1, &value);
            // SAFETY: the block is live and nothing writes it now; slot 1 lies within it.
            let slot = unsafe {
                core::slice::from_raw_parts(
                    base.as_ptr().add(Shape::slots_offset() + shape.stride()),
                    shape.stride(),
                )
            };
            assert_eq!(slot[..8], done(1).to_ne_bytes(), "the stamp");
            assert!(
                slot[8..64].iter().all(|&b| b == 0),
                "the rest of the stamp's line"
            );
            assert_eq!(
                slot[64..64 + 1024],
                value[..],
                "the payload, from the second line"
            );
            let mut out = vec![0u8; 1024];
            assert_eq!(ring.read_bytes(1, &mut out), Read::Value(()));
            assert_eq!(out, value);
            let mut head = [0u8; 16];
            assert_eq!(ring.read_bytes(1, &mut head), Read::Value(()));
            assert_eq!(head[..], value[..16]);
            // A typed ring of the same size lays its values out alike.
            let typed: [u64; 128] = core::array::from_fn(|i| i as u64 * 3 + 1);
            ring.write(2, &typed);
            assert_eq!(ring.read::<[u64; 128]>(2), Read::Value(typed));
            let mut bytes = vec![0u8; 1024];
            assert_eq!(ring.read_bytes(2, &mut bytes), Read::Value(()));
            assert_eq!(bytes, bytemuck::bytes_of(&typed));
        });
    }

    /// Bytes shorter than the value end in a zero-padded word, in the bulk words of a large
    /// value as in the word-by-word tail (`store_bytes`' promise).
    #[test]
    fn short_bytes_end_in_a_zero_padded_word() {
        let shape = shape_of(1024);
        on_fresh_ring(shape, |ring, _| {
            // Sequence 0 fills slot 0; 4 (capacity 4) writes it again, shorter.
            ring.write_bytes(0, &[0xFF; 1024]);
            ring.write_bytes(4, &[0x11; 13]);
            let mut out = [0u8; 16];
            assert_eq!(ring.read_bytes(4, &mut out), Read::Value(()));
            assert_eq!(out[..13], [0x11; 13]);
            assert_eq!(out[13..], [0; 3], "the last word's padding");
        });
    }

    /// A batch of 8-byte values leaves every slot as a `write` per value would (final stamp,
    /// then the value), across the end of the array and with an odd count, whether it goes
    /// in as pairs of 16-byte stores (x86-64 with AVX) or through the general path (miri).
    #[test]
    fn a_batch_of_words_leaves_the_slots_a_write_per_value_would() {
        let shape = Shape {
            capacity: 16,
            ..shape_of(8)
        };
        on_fresh_ring(shape, |ring, _| {
            let value = |seq: u64| seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA5;
            // Sequences 0..16 (a lap, even), then 16..29 (odd), then 29..40: a run that starts
            // at slot 13 and wraps to slot 7.
            for (first, len) in [(0u64, 16u64), (16, 13), (29, 11)] {
                let values: Vec<u64> = (first..first + len).map(value).collect();
                ring.write_run(first, &values);
                for seq in first..first + len {
                    let slot = ring.slot_ptr(seq);
                    assert_eq!(
                        ring.stamp(slot).load(Ordering::Relaxed),
                        done(seq),
                        "stamp of {seq}"
                    );
                    assert_eq!(
                        ring.word(slot, 0).load(Ordering::Relaxed),
                        value(seq),
                        "value of {seq}"
                    );
                    assert_eq!(ring.read::<u64>(seq), Read::Value(value(seq)));
                }
            }
            // Slots 0..8 were written last by the third run (24..32); the run before it is gone.
            assert_eq!(ring.read::<u64>(20), Read::Overrun);
            let mut out = [0u64; 16];
            assert_eq!(ring.read_run(24, &mut out), Some(16));
            assert_eq!(out.to_vec(), (24..40).map(value).collect::<Vec<_>>());
            // A value whose bytes are not those of a `u64` goes in the same way.
            let bytes: Vec<[u8; 8]> = (40..43u64).map(|s| value(s).to_ne_bytes()).collect();
            ring.write_run(40, &bytes);
            for (k, b) in bytes.iter().enumerate() {
                assert_eq!(ring.read::<[u8; 8]>(40 + k as u64), Read::Value(*b));
            }
        });
    }

    /// `read_run` of 8-byte values gives back every value of the run, whether a `write` per
    /// value or a batch (16-byte stores on x86-64 with AVX) wrote the slots: runs that wrap
    /// the array's end with an odd part on either side, a run of one, and a run that reaches
    /// past the newest sequence.
    #[test]
    fn a_run_of_words_reads_back_across_the_end_and_odd_counts() {
        let shape = Shape {
            capacity: 16,
            ..shape_of(8)
        };
        on_fresh_ring(shape, |ring, _| {
            let value = |seq: u64| seq.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ 0x5A;
            // Sequences 16..32 one `write` each, then 32..41 as a batch: slots 0..9 hold 32..41
            // and slots 9..16 hold 25..32.
            for seq in 16..32 {
                ring.write(seq, &value(seq));
            }
            let batch: Vec<u64> = (32..41).map(value).collect();
            ring.write_run(32, &batch);
            for (start, len) in [
                (25u64, 16usize),
                (26, 15),
                (25, 13),
                (30, 5),
                (40, 1),
                (33, 8),
            ] {
                let mut out = vec![0u64; len];
                assert_eq!(
                    ring.read_run(start, &mut out),
                    Some(len),
                    "run {start} + {len}"
                );
                let want: Vec<u64> = (start..start + len as u64).map(value).collect();
                assert_eq!(out, want, "run {start} + {len}");
            }
            // The same through `[u8; 8]`.
            let mut bytes = [[0u8; 8]; 7];
            assert_eq!(ring.read_run(27, &mut bytes), Some(7));
            for (k, b) in bytes.iter().enumerate() {
                assert_eq!(
                    *b,
                    value(27 + k as u64).to_ne_bytes(),
                    "bytes of {}",
                    27 + k
                );
            }
            // A run that reaches past the newest sequence stops there.
            let mut out = [0u64; 4];
            assert_eq!(ring.read_run(39, &mut out), Some(2));
            assert_eq!(out[..2], [value(39), value(40)]);
        });
    }

    #[test]
    fn stamps_order_laps() {
        assert!(done(3) > writing(3));
        assert!(writing(3) > done(2));
        assert_eq!(done(0), 2, "0 stays the never-written stamp");
    }
}
