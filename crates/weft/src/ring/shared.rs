//! The backing of an in-process ring: a heap block (or an anonymous mapping with hugepages
//! and locked pages) that every handle keeps alive through one `Arc`.

use super::raw::{LINE, RawRing, Shape};
use core::ptr::NonNull;

/// Where the ring memory lives.
#[derive(Debug)]
enum Backing {
    /// `alloc::alloc` with a 64-byte alignment.
    Heap {
        ptr: NonNull<u8>,
        layout: core::alloc::Layout,
    },
    /// An anonymous mapping (hugepage-advised and/or mlocked).
    #[cfg(feature = "std")]
    Mapping(#[allow(dead_code)] crate::sys::Mapping),
}

/// Ring memory plus the algorithm handle over it.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) raw: RawRing,
    shape: Shape,
    backing: Backing,
}

// SAFETY: every access to the block goes through atomics (see `raw`); the block lives as long
// as the `Shared`, which the `Arc` frees only when no handle is left.
unsafe impl Send for Shared {}
// SAFETY: as for Send: `&Shared` only reaches the block through atomics.
unsafe impl Sync for Shared {}

impl Shared {
    /// A heap-backed ring of `shape`.
    pub(crate) fn heap(shape: Shape) -> Shared {
        super::wake::init();
        let layout = core::alloc::Layout::from_size_align(shape.bytes(), LINE).expect(
            "ring size fits in isize (checked by `ring::build`, the only caller outside tests)",
        );
        // SAFETY: the layout has a non-zero size (a header at least).
        let ptr = unsafe { alloc::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            alloc::alloc::handle_alloc_error(layout)
        };
        // SAFETY: fresh, aligned, `shape.bytes()` long, owned by `backing` for the life of
        // `self`, not yet shared; the capacity was checked by the constructor.
        let raw = unsafe { RawRing::init(ptr, shape) };
        Shared {
            raw,
            shape,
            backing: Backing::Heap { ptr, layout },
        }
    }

    /// A ring of `shape` in an anonymous mapping, advised for hugepages and/or locked.
    #[cfg(feature = "std")]
    pub(crate) fn mapped(shape: Shape, hugepages: bool, lock: bool) -> crate::Result<Shared> {
        super::wake::init();
        let map = crate::sys::Mapping::anonymous(shape.bytes(), hugepages, lock)?;
        let ptr = NonNull::new(map.as_ptr()).expect("a mapping is never at null");
        // SAFETY: page-aligned (so 64-aligned), `shape.bytes()` long, owned by `backing` for
        // the life of `self`, not yet shared.
        let raw = unsafe { RawRing::init(ptr, shape) };
        Ok(Shared {
            raw,
            shape,
            backing: Backing::Mapping(map),
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Loom's atomics own model state: drop them in place (a no-op for the real ones).
        #[cfg(loom)]
        {
            let base = match &self.backing {
                Backing::Heap { ptr, .. } => *ptr,
                #[cfg(feature = "std")]
                Backing::Mapping(m) => NonNull::new(m.as_ptr()).expect("non-null"),
            };
            // SAFETY: the header was written by `init` and no handle is left.
            unsafe { core::ptr::drop_in_place(base.cast::<super::raw::Header>().as_ptr()) };
            let _ = self.shape;
        }
        let _ = self.shape;
        #[allow(irrefutable_let_patterns)] // without std the heap is the only backing
        if let Backing::Heap { ptr, layout } = self.backing {
            // SAFETY: allocated in `heap` with this layout; the last handle is gone.
            unsafe { alloc::alloc::dealloc(ptr.as_ptr(), layout) };
        }
    }
}
