//! Typed topics across the bridge: the type a topic records (name, size, alignment) as the
//! bridge carries it, the rules that tell a bridge which Rust type a topic holds, and how a
//! bridge learns the recorded type of a topic through weft's public API.
//!
//! weft's public API has no call that returns a topic's recorded type, and none that
//! registers a topic with a type described at run time (only `register_typed::<T>`). So:
//! - a bridge told the Rust type of a topic (`BridgeBuilder::typed::<T>`) subscribes and
//!   registers with `subscribe_typed::<T>` / `register_typed::<T>`, exactly as a local
//!   publisher or subscriber of `T` would, and carries `T`'s name, size and alignment;
//! - otherwise it learns the recorded name and size from the `TypeMismatch` that weft returns
//!   for a typed subscription with a private probe type ([`probe`]); the alignment stays
//!   unknown (0), the far side checks the name and size and refuses a mismatch, and a topic it
//!   has to register is registered untyped.

use crate::pattern::Pattern;
use serde::Serialize;
use weft::pubsub::{Publisher, Subscriber, Subscription, Topic, TopicSpec};

/// How many bytes of a type name a region records (longer names are cut).
const REGION_TYPE_NAME_MAX: usize = 64;

/// A topic's type as a bridge carries it: the name `core::any::type_name` gives, the size, and
/// the alignment (0 when unknown).
///
/// # Examples
/// ```
/// use weft_zenoh::TypeMeta;
/// let t = TypeMeta::of::<u64>();
/// assert_eq!((t.name.as_str(), t.size, t.align), ("u64", 8, 8));
/// assert!(t.agrees_with(&TypeMeta::new("u64", 8, 0)));       // alignment unknown on one side
/// assert!(!t.agrees_with(&TypeMeta::new("i64", 8, 8)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TypeMeta {
    /// The type's name (at most 256 bytes are kept).
    pub name: String,
    /// Its size in bytes.
    pub size: u32,
    /// Its alignment in bytes; 0 when unknown.
    pub align: u32,
}

impl TypeMeta {
    /// A type described by hand.
    pub fn new(name: &str, size: u32, align: u32) -> TypeMeta {
        let mut end = name.len().min(crate::wire::TYPE_NAME_MAX);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        TypeMeta {
            name: name[..end].into(),
            size,
            align,
        }
    }

    /// The type `T`, as `register_typed::<T>` records it.
    pub fn of<T: bytemuck::Pod>() -> TypeMeta {
        TypeMeta::new(
            core::any::type_name::<T>(),
            core::mem::size_of::<T>() as u32,
            core::mem::align_of::<T>() as u32,
        )
    }

    /// FNV-1a 64 over the name and the size: what the wire header carries, so that a damaged
    /// or forged type description is refused.
    pub fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.name.bytes().chain(self.size.to_le_bytes()) {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }

    /// Whether `other` describes the same type: the same size, the same name (a region keeps
    /// only the first 64 bytes of a name, so a 64-byte name agrees with a longer one it
    /// begins), and the same alignment when both know it.
    pub fn agrees_with(&self, other: &TypeMeta) -> bool {
        let names = if self.name.len() <= other.name.len() {
            (&self.name, &other.name)
        } else {
            (&other.name, &self.name)
        };
        let (short, long) = names;
        let name_ok = short == long
            || (short.len() == REGION_TYPE_NAME_MAX
                && long.len() > REGION_TYPE_NAME_MAX
                && *short == String::from_utf8_lossy(&long.as_bytes()[..REGION_TYPE_NAME_MAX]));
        name_ok
            && self.size == other.size
            && (self.align == 0 || other.align == 0 || self.align == other.align)
    }
}

impl core::fmt::Display for TypeMeta {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "`{}` ({} bytes", self.name, self.size)?;
        if self.align != 0 {
            write!(f, ", align {}", self.align)?;
        }
        f.write_str(")")
    }
}

/// A Rust type a bridge was told topics matching `pattern` hold.
pub(crate) struct TypeRule {
    pub pattern: Pattern,
    pub meta: TypeMeta,
    pub subscribe: fn(&Subscriber, &str) -> weft::Result<Subscription>,
    /// Registers the topic with `T` and the spec's mode (the existing topic's, or blocks).
    pub register: fn(&Publisher, &str, &TopicSpec) -> weft::Result<Topic>,
}

impl core::fmt::Debug for TypeRule {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TypeRule")
            .field("pattern", &self.pattern)
            .field("meta", &self.meta)
            .finish()
    }
}

impl TypeRule {
    pub fn new<T: bytemuck::Pod>(pattern: Pattern) -> TypeRule {
        fn subscribe<T: bytemuck::Pod>(s: &Subscriber, t: &str) -> weft::Result<Subscription> {
            s.subscribe_typed::<T>(t)
        }
        fn register<T: bytemuck::Pod>(
            p: &Publisher,
            t: &str,
            spec: &TopicSpec,
        ) -> weft::Result<Topic> {
            p.register_spec(t, &spec.clone().typed::<T>())
        }
        TypeRule {
            pattern,
            meta: TypeMeta::of::<T>(),
            subscribe: subscribe::<T>,
            register: register::<T>,
        }
    }
}

/// What weft appends to the name of a type registered without a stable name when it reports
/// a mismatch.
const UNNAMED_NOTE: &str = " (unnamed: checked by size and alignment)";

/// A type no topic is registered with: a typed subscription with it fails with the recorded
/// type in the error.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct WeftZenohTypeProbe([u8; 3]);

/// The recorded type of `topic` (registered in `sub`'s region): `None` when it is untyped.
/// The alignment is not recorded in what weft reports, so it is 0 (unknown).
///
/// # Errors
/// As `Subscriber::subscribe` (`NotFound` when the topic is not registered).
pub(crate) fn probe(sub: &Subscriber, topic: &str) -> weft::Result<Option<TypeMeta>> {
    // A topic registered again between the two probes below (with a type of the second one's
    // size) is probed again: a few times, never for ever.
    for _ in 0..PROBE_TRIES {
        match sub.subscribe_typed::<WeftZenohTypeProbe>(topic) {
            // A type of the probe's size and alignment (an unnamed type is checked by those
            // alone): a probe of another size has the type named in its mismatch.
            Ok(_) => match sub.subscribe_typed::<WeftZenohTypeProbe5>(topic) {
                Ok(_) => continue,
                Err(e) => return from_mismatch(e),
            },
            Err(e) => return from_mismatch(e),
        }
    }
    Err(weft::Error::InvalidArgument {
        what: "the type of a topic registered again while it was probed",
        value: PROBE_TRIES as u64,
        expected: "a registration that stays while two probes look at it",
    })
}

/// How many times [`probe`] looks at a topic that keeps changing under it.
const PROBE_TRIES: usize = 4;

/// A second probe type, of another size than [`WeftZenohTypeProbe`].
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct WeftZenohTypeProbe5([u8; 5]);

/// What a probe's refusal says of the topic's type.
fn from_mismatch(e: weft::Error) -> weft::Result<Option<TypeMeta>> {
    match e {
        // An untyped topic is reported with size 0 (a typed one has at least 1 byte).
        weft::Error::TypeMismatch {
            found, found_size, ..
        } => {
            // A type registered without a stable name is described with a note saying that
            // only its size and alignment are checked; the name carried is the type's own.
            let name = found.strip_suffix(UNNAMED_NOTE).unwrap_or(&found);
            Ok((found_size != 0).then(|| TypeMeta::new(name, found_size as u32, 0)))
        }
        e => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cut_by_the_region_still_agree() {
        let long = "a".repeat(80);
        let full = TypeMeta::new(&long, 8, 8);
        let cut = TypeMeta::new(&long[..64], 8, 0);
        assert!(full.agrees_with(&cut) && cut.agrees_with(&full));
        assert!(!full.agrees_with(&TypeMeta::new(&long[..63], 8, 0)));
        assert!(!full.agrees_with(&TypeMeta::new(&long, 16, 8)));
        assert!(!full.agrees_with(&TypeMeta::new(&long, 8, 4)));
    }
}
