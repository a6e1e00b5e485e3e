//! Named topics in one process: each name holds one broadcast ring of one type, checked at run
//! time, with one exclusive publisher and any number of subscribers, until
//! [`Bus::remove`] forgets it.
//!
//! ```
//! use weft::bus::Bus;
//! let bus = Bus::new(1024);
//! let mut prices = bus.publisher::<f64>("prices").unwrap();
//! let mut rx = bus.subscribe::<f64>("prices").unwrap();
//! prices.publish(101.5);
//! assert_eq!(rx.try_recv(), Ok(101.5));
//! // Another type under the same name is an error, not undefined behaviour.
//! assert!(bus.subscribe::<u32>("prices").is_err());
//! ```

use crate::ring::{self, Publisher, Ring, Subscriber};
use crate::{Error, Result, Role};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Mutex;

/// One topic: its ring, its type, and its publisher while nobody has taken it.
struct Topic {
    type_id: TypeId,
    type_name: &'static str,
    size: usize,
    /// A `Ring<T>` of the topic's type.
    ring: Box<dyn Any + Send + Sync>,
    /// The `Publisher<T>` until [`Bus::publisher`] takes it.
    publisher: Option<Box<dyn Any + Send>>,
}

/// A registry of named broadcast topics, shared by reference (or in an `Arc`) between the
/// threads of one process. Different names may hold different types.
///
/// # Examples
/// ```
/// use weft::bus::Bus;
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Tick { price: f64, qty: u64 }
/// let bus = Bus::new(64);
/// let mut ticks = bus.subscribe::<Tick>("ticks").unwrap(); // before the publisher exists
/// let mut tx = bus.publisher::<Tick>("ticks").unwrap();
/// tx.publish(Tick { price: 1.0, qty: 2 });
/// assert_eq!(ticks.try_recv().unwrap().qty, 2);
/// ```
pub struct Bus {
    capacity: u64,
    topics: Mutex<HashMap<String, Topic>>,
}

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("capacity", &self.capacity)
            .field("topics", &self.topics())
            .finish()
    }
}

impl Bus {
    /// A bus whose topics are rings of `capacity` slots (rounded up to a power of two, at
    /// most 2^40). Each ring is allocated when its topic is first used: a capacity too large
    /// for a topic's type or for memory is an error from that call
    /// ([`publisher`](Bus::publisher), [`subscribe`](Bus::subscribe), [`ring`](Bus::ring)).
    ///
    /// # Examples
    /// ```
    /// let bus = weft::bus::Bus::new(1 << 40);
    /// // 2^40 slots of 2 MiB (a 1 MiB message and its stamp): more than any address space.
    /// assert!(bus.subscribe::<[u8; 1 << 20]>("too-big").is_err());
    /// assert!(bus.topics().is_empty()); // nothing was made
    /// ```
    pub fn new(capacity: u64) -> Bus {
        Bus {
            capacity,
            topics: Mutex::new(HashMap::new()),
        }
    }

    /// The names of every topic, sorted.
    ///
    /// # Examples
    /// ```
    /// let bus = weft::bus::Bus::new(8);
    /// assert!(bus.topics().is_empty());
    /// let _tx = bus.publisher::<u64>("b").unwrap();
    /// let _rx = bus.subscribe::<u32>("a").unwrap(); // subscribing creates the topic too
    /// assert_eq!(bus.topics(), ["a", "b"]);
    /// ```
    pub fn topics(&self) -> Vec<String> {
        let mut v: Vec<String> = self.lock().keys().cloned().collect();
        v.sort();
        v
    }

    /// Forgets topic `name`, so that its ring is freed once the handles made from it are gone;
    /// returns whether there was such a topic. A publisher and subscribers already made keep
    /// the old topic between them; a publisher not taken yet is dropped with it (the topic's
    /// subscribers drain and see `Closed`). The name is free again, for any type.
    ///
    /// # Examples
    /// ```
    /// use weft::ring::RecvError;
    /// let bus = weft::bus::Bus::new(8);
    /// let mut rx = bus.subscribe::<u64>("job-17").unwrap(); // no publisher taken
    /// assert!(bus.remove("job-17"));
    /// assert_eq!(rx.try_recv(), Err(RecvError::Closed)); // nobody can publish any more
    /// assert!(bus.topics().is_empty());
    /// assert!(!bus.remove("job-17"));
    /// assert!(bus.subscribe::<f32>("job-17").is_ok()); // a new topic, of another type
    /// ```
    pub fn remove(&self, name: &str) -> bool {
        // Dropped after the lock: an untaken publisher's drop wakes the topic's subscribers.
        let topic = self.lock().remove(name);
        topic.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Topic>> {
        // A panic while holding the lock cannot leave the map half-updated (every update is
        // one insert or one field swap), so a poisoned lock is still usable.
        self.topics.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fresh<T: bytemuck::Pod>(&self) -> Result<Topic> {
        let (tx, ring) = ring::channel_with::<T>(self.capacity, ring::Options::new())?;
        Ok(Topic {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            size: size_of::<T>(),
            ring: Box::new(ring),
            publisher: Some(Box::new(tx)),
        })
    }

    /// Runs `f` on the topic `name` of type `T`, creating it if needed and starting it over
    /// if its publisher is gone (its old subscribers see `Closed`).
    fn with_topic<T: bytemuck::Pod, R>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Topic) -> Result<R>,
    ) -> Result<R> {
        if name.is_empty() {
            return Err(Error::InvalidName {
                name: name.into(),
                reason: "a topic name cannot be empty",
            });
        }
        let mut topics = self.lock();
        let topic = match topics.entry(name.to_string()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(self.fresh::<T>()?),
        };
        if topic.type_id != TypeId::of::<T>() {
            return Err(Error::TypeMismatch {
                name: name.into(),
                found: topic.type_name.into(),
                found_size: topic.size as u64,
                expected: std::any::type_name::<T>().into(),
                expected_size: size_of::<T>() as u64,
            });
        }
        let ring = topic
            .ring
            .downcast_ref::<Ring<T>>()
            .expect("the type id was checked");
        if topic.publisher.is_none() && ring.is_closed() {
            *topic = self.fresh::<T>()?;
        }
        f(topic)
    }

    /// Takes the publisher of topic `name`, creating the topic if needed. There is one
    /// publisher per topic; when it is dropped the topic's subscribers drain and see
    /// `Closed`, and the next call starts the topic over.
    ///
    /// # Errors
    /// - [`Error::TypeMismatch`] when `name` holds another type;
    /// - [`Error::InUse`] when the publisher is taken and alive;
    /// - [`Error::InvalidName`] for an empty name;
    /// - [`Error::InvalidArgument`] or `Error::Io` when a new topic's ring cannot be made
    ///   (the bus's capacity times the size of `T` does not fit in `isize`, or in memory).
    ///
    /// # Examples
    /// ```
    /// let bus = weft::bus::Bus::new(8);
    /// let tx = bus.publisher::<u64>("a").unwrap();
    /// assert_eq!(bus.publisher::<u64>("a").unwrap_err().kind(), weft::ErrorKind::InUse);
    /// drop(tx);
    /// assert!(bus.publisher::<u64>("a").is_ok());
    /// ```
    pub fn publisher<T: bytemuck::Pod>(&self, name: &str) -> Result<Publisher<T>> {
        self.with_topic::<T, _>(name, |topic| match topic.publisher.take() {
            Some(p) => Ok(*p
                .downcast::<Publisher<T>>()
                .expect("the type id was checked")),
            None => Err(Error::InUse {
                name: name.into(),
                role: Role::Publisher,
                pid: std::process::id(),
            }),
        })
    }

    /// A subscriber of topic `name` (creating the topic if needed) that starts with the next
    /// message published.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when `name` holds another type; [`Error::InvalidName`] for an
    /// empty name; [`Error::InvalidArgument`] or `Error::Io` when a new topic's ring cannot be
    /// made (as for [`publisher`](Bus::publisher)).
    pub fn subscribe<T: bytemuck::Pod>(&self, name: &str) -> Result<Subscriber<T>> {
        Ok(self.ring::<T>(name)?.subscribe())
    }

    /// The subscribable ring of topic `name`, for the other ways to subscribe
    /// ([`Ring::subscribe_from_oldest`], [`Ring::subscribe_group`], ...).
    ///
    /// # Errors
    /// As [`subscribe`](Bus::subscribe).
    ///
    /// # Examples
    /// ```
    /// let bus = weft::bus::Bus::new(8);
    /// let mut tx = bus.publisher::<u64>("log").unwrap();
    /// tx.publish_batch(&[1, 2, 3]);
    /// // A late subscriber that still gets what the ring holds.
    /// let mut late = bus.ring::<u64>("log").unwrap().subscribe_from_oldest();
    /// assert_eq!(late.try_recv(), Ok(1));
    /// assert!(bus.ring::<f32>("log").is_err()); // another type
    /// ```
    pub fn ring<T: bytemuck::Pod>(&self, name: &str) -> Result<Ring<T>> {
        self.with_topic::<T, _>(name, |topic| {
            Ok(topic
                .ring
                .downcast_ref::<Ring<T>>()
                .expect("the type id was checked")
                .clone())
        })
    }
}
