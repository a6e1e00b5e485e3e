//! The byte stream: an SPSC bipartite buffer of variable-length records, for everything from
//! 64-byte events to 50 MB tensors.
//!
//! The algorithm (`bipbuf`) works over raw memory and builds without `std`; the handles that
//! place it in named shared memory between processes, [`StreamWriter`] and [`StreamReader`],
//! need the `std` feature.
//!
//! # Examples
//! ```
//! use weft::stream::{StreamReader, StreamWriter};
//! # let name = format!("doc-stream-{}", std::process::id());
//! let mut writer = StreamWriter::create(&name, 1 << 20)?;
//! let mut reader = StreamReader::open(&name)?;
//!
//! writer.write(b"hello")?;                  // copy in
//! let mut grant = writer.reserve(4)?;        // or write in place
//! grant.copy_from_slice(b"tick");
//! grant.commit(4)?;
//!
//! assert_eq!(&*reader.read()?, b"hello");   // borrowed in place, released on drop
//! assert_eq!(&*reader.read()?, b"tick");
//! # Ok::<(), weft::Error>(())
//! ```

// Without `std` the core has no handle to drive it; the build proves it needs no `std`.
#![cfg_attr(not(feature = "std"), allow(dead_code))]

pub(crate) mod bipbuf;
pub(crate) mod layout;

pub use layout::ALIGNMENTS;

#[cfg(test)]
mod tests;

#[cfg(all(feature = "std", not(loom)))]
pub use crate::shm::stream::{
    ReadBatch, ReadGrant, StreamInfo, StreamOptions, StreamReader, StreamStats, StreamWriter,
    WriteGrant, inspect,
};

/// A stream in ordinary heap memory for the algorithm's tests and models.
#[cfg(test)]
pub(crate) mod heap {
    use super::bipbuf::{Geometry, ReaderCore, WriterCore};
    use super::layout::StreamControl;
    use alloc::alloc::{Layout, alloc_zeroed, dealloc};
    use alloc::boxed::Box;
    use core::ptr::NonNull;

    /// A control block and a data area on the heap.
    pub(crate) struct HeapStream {
        pub(crate) ctl: Box<StreamControl>,
        data: NonNull<u8>,
        layout: Layout,
        pub(crate) geo: Geometry,
    }

    // SAFETY: plain owned memory; the cores built over it do their own synchronisation.
    unsafe impl Send for HeapStream {}
    // SAFETY: as above: shared access only through the cores' atomics and SPSC ranges.
    unsafe impl Sync for HeapStream {}

    impl HeapStream {
        pub(crate) fn new(capacity: u64, align: u64) -> HeapStream {
            let geo = Geometry::new(capacity, align).expect("test geometry");
            let layout = Layout::from_size_align(capacity as usize, align as usize).unwrap();
            // SAFETY: the layout has a non-zero size (capacity >= 4 headers).
            let data = NonNull::new(unsafe { alloc_zeroed(layout) }).expect("allocation");
            HeapStream {
                ctl: Box::default(),
                data,
                layout,
                geo,
            }
        }

        pub(crate) fn writer(&self) -> WriterCore {
            self.try_writer().unwrap()
        }

        /// A writer, or the corruption its constructor found (a takeover of a scribbled stream).
        pub(crate) fn try_writer(&self) -> Result<WriterCore, super::bipbuf::Corrupt> {
            // SAFETY: the memory lives as long as `self`, which the tests keep alive longer than
            // the cores; one writer per stream in every test.
            unsafe { WriterCore::new(NonNull::from(&*self.ctl), self.data, self.geo) }
        }

        pub(crate) fn reader(&self) -> ReaderCore {
            // SAFETY: as for `writer`.
            unsafe { ReaderCore::new(NonNull::from(&*self.ctl), self.data, self.geo) }.unwrap()
        }
    }

    impl Drop for HeapStream {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.data.as_ptr(), self.layout) }
        }
    }
}
