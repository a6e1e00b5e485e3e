//! Everything that crosses processes: named shared-memory objects, their common header and
//! participant rows, and the handles built on them.
//!
//! Every object lives under `/dev/shm/weft.NAME`, created with mode 0600 and `O_EXCL`, and
//! starts with a 128-byte header (magic, layout version, kind, size, creator, ready flag) that
//! every opener validates against the file before it reads anything else. The layouts are
//! described byte by byte in docs/protocol.md.
//!
//! Tools list and inspect them read-only: [`objects`] and [`object`] (every kind),
//! [`crate::stream::inspect`], [`crate::pubsub::inspect`] and [`crate::pubsub::details`],
//! [`crate::channel::Server::inspect`].

pub(crate) mod channel;
pub(crate) mod inspect;
pub(crate) mod liveness;
pub(crate) mod object;
pub(crate) mod pubsub;
pub(crate) mod server;
pub(crate) mod stream;

pub use inspect::{
    ObjectInfo, Peer, PeerState, object, objects, remove_abandoned, remove_own_abandoned,
};
pub use object::{LAYOUT_VERSION, ObjectKind};
#[doc(hidden)]
pub use server::{HandshakeStep, pause_handshake_at};
