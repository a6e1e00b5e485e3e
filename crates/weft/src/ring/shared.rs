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
    ///
    /// # Errors
    /// `Error::InvalidArgument` when the ring's size in bytes is not a valid allocation size;
    /// `Error::Io` (`OutOfMemory`) when the allocator cannot provide the block (without `std`:
    /// `Error::InvalidArgument`). Never aborts the process, unlike `handle_alloc_error`.
    pub(crate) fn try_heap(shape: Shape) -> crate::Result<Shared> {
        let bytes = shape.bytes();
        let layout = core::alloc::Layout::from_size_align(bytes, LINE).map_err(|_| {
            crate::Error::InvalidArgument {
                what: "ring size in bytes",
                value: bytes as u64,
                expected: "a size that fits in isize once rounded up to 64 bytes",
            }
        })?;
        super::wake::init();
        // SAFETY: the layout has a non-zero size (a header at least).
        let ptr = unsafe { alloc::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(alloc_failed(bytes));
        };
        // SAFETY: fresh, aligned, `shape.bytes()` long, owned by `backing` for the life of
        // `self`, not yet shared; the capacity was checked by the constructor.
        let raw = unsafe { RawRing::init(ptr, shape) };
        Ok(Shared {
            raw,
            shape,
            backing: Backing::Heap { ptr, layout },
        })
    }

    /// [`try_heap`](Shared::try_heap) for the unit tests and models, whose rings are small.
    #[cfg(test)]
    pub(crate) fn heap(shape: Shape) -> Shared {
        Shared::try_heap(shape).expect("a test ring of a few slots fits in memory")
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

/// The error for a heap block of `bytes` that the allocator refused.
fn alloc_failed(bytes: usize) -> crate::Error {
    #[cfg(feature = "std")]
    {
        let e = std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            alloc::format!("the allocator refused {bytes} bytes"),
        );
        crate::Error::io("allocate", "ring", e)
    }
    #[cfg(not(feature = "std"))]
    {
        crate::Error::InvalidArgument {
            what: "ring size in bytes",
            value: bytes as u64,
            expected: "a size the allocator can provide",
        }
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
