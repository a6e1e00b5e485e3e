//! What a bridge does, as a struct a program fills in or a JSON5 file describes (the form the
//! `weft bridge` command reads).

use crate::error::{Error, Result};
use crate::pattern::Pattern;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// How the bridge's Zenoh session joins the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZenohMode {
    /// A peer: connects to the `connect` endpoints, accepts connections on `listen`, and (with
    /// multicast scouting) finds other peers on the local network by itself. The default.
    #[default]
    Peer,
    /// A client of a Zenoh router (given in `connect`).
    Client,
}

impl ZenohMode {
    fn as_str(self) -> &'static str {
        match self {
            ZenohMode::Peer => "peer",
            ZenohMode::Client => "client",
        }
    }
}

/// What a bridge does when Zenoh cannot send as fast as the region publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// Wait for Zenoh (the default): nothing is dropped on the way out; a bridge that falls
    /// behind its region lags there, and the far side counts what it missed.
    #[default]
    Block,
    /// Drop what Zenoh cannot take: the far side counts the drops as lag.
    Drop,
}

/// The shape of a region the bridge creates because an inbound topic arrived and the region
/// did not exist (see `weft::pubsub::Config`; `None` keeps weft's default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionShape {
    /// Blocks in the pool.
    #[serde(default)]
    pub blocks: Option<usize>,
    /// Bytes per block (the largest sample that can be bridged in).
    #[serde(default)]
    pub block_size: Option<usize>,
    /// Descriptors per topic ring.
    #[serde(default)]
    pub ring_slots: Option<usize>,
    /// Topics the region can hold.
    #[serde(default)]
    pub topics: Option<usize>,
}

impl RegionShape {
    pub(crate) fn config(&self) -> weft::pubsub::Config {
        let mut c = weft::pubsub::Config::default();
        if let Some(n) = self.blocks {
            c = c.blocks(n);
        }
        if let Some(n) = self.block_size {
            c = c.block_size(n);
        }
        if let Some(n) = self.ring_slots {
            c = c.ring_slots(n);
        }
        if let Some(n) = self.topics {
            c = c.topics(n);
        }
        c
    }
}

/// Everything a bridge needs: the region, which topics go out and which come in, and how the
/// Zenoh session connects.
///
/// Build it in code with [`BridgeConfig::new`] and the builder methods, or read it from a
/// JSON5 file with [`BridgeConfig::from_file`]. Every field but `region` is optional in the
/// file:
///
/// ```json5
/// {
///   region: "market",                    // the weft region (created if absent and topics come in)
///   outbound: ["/prices/**"],            // region -> Zenoh
///   inbound: ["/orders/*"],              // Zenoh -> region
///   mode: "peer",                        // or "client"
///   listen: ["tcp/0.0.0.0:7447"],
///   connect: ["tcp/10.0.0.2:7447"],
///   multicast_scouting: false,           // default true, as in Zenoh
///   key_prefix: "weft/market",           // default "weft/<region>"
///   origin: "host-a/market",             // default "<hostname>/<machine id>/<region>"
///   congestion: "block",                 // or "drop"
///   express: false,                      // true: no batching (lower latency, lower throughput)
///   region_shape: { block_size: 65536 }, // when the bridge creates the region
///   discovery_interval_ms: 100,          // how often new outbound topics are looked for
///   zenoh: { "transport/link/tx/lease": 3000 },  // raw Zenoh settings (key: JSON value)
/// }
/// ```
///
/// # Examples
/// ```
/// use weft_zenoh::{BridgeConfig, ZenohMode};
/// let config = BridgeConfig::new("market")
///     .outbound("/prices/**")?
///     .inbound("/orders/*")?
///     .listen("tcp/127.0.0.1:17447")
///     .multicast_scouting(false);
/// assert_eq!(config.key_prefix(), "weft/market");
/// assert_eq!(config.key_for("/prices/AAPL"), "weft/market/prices/AAPL");
///
/// let same = BridgeConfig::from_json5(r#"{
///     region: "market",
///     outbound: ["/prices/**"],
///     inbound: ["/orders/*"],
///     listen: ["tcp/127.0.0.1:17447"],
///     multicast_scouting: false,
/// }"#)?;
/// assert_eq!(same, config);
/// assert_eq!(same.mode, ZenohMode::Peer);
/// # Ok::<(), weft_zenoh::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// The weft region whose topics are bridged.
    pub region: String,
    /// Topics published in the region that are forwarded to Zenoh.
    #[serde(default)]
    pub outbound: Vec<Pattern>,
    /// Topics received from Zenoh that are published into the region (registered on demand).
    /// A sample whose topic several patterns match is published once.
    #[serde(default)]
    pub inbound: Vec<Pattern>,
    /// Peer (default) or client.
    #[serde(default)]
    pub mode: ZenohMode,
    /// Zenoh endpoints to accept connections on (`tcp/HOST:PORT`). Empty: Zenoh's default
    /// for the mode (a peer listens on a free TCP port).
    #[serde(default)]
    pub listen: Vec<String>,
    /// Zenoh endpoints to connect to (`tcp/HOST:PORT`): peers, or a client's router.
    #[serde(default)]
    pub connect: Vec<String>,
    /// Whether to find peers by multicast scouting (Zenoh's default, on). Off, the session
    /// talks only to its `connect` endpoints and to whoever connects to its `listen` ones.
    #[serde(default = "default_true")]
    pub multicast_scouting: bool,
    /// The Zenoh key that topic paths are appended to; `None`: `weft/<region>`.
    #[serde(default)]
    pub key_prefix: Option<String>,
    /// Names this source for sequence tracking on the far side (which counts gaps per origin
    /// and topic, across restarts of the bridge); a sample that arrives with the bridge's own
    /// origin is dropped as looped. `None`: `<hostname>/<machine id>/<region>` (see
    /// [`BridgeConfig::origin_name`]).
    #[serde(default)]
    pub origin: Option<String>,
    /// Block (default) or drop when Zenoh cannot keep up.
    #[serde(default)]
    pub congestion: Congestion,
    /// Send every sample at once instead of batching (Zenoh's `express`).
    #[serde(default)]
    pub express: bool,
    /// The shape of the region if the bridge has to create it.
    #[serde(default)]
    pub region_shape: RegionShape,
    /// How often the region is searched for new outbound topics, in milliseconds.
    #[serde(default = "default_discovery_ms")]
    pub discovery_interval_ms: u64,
    /// Raw Zenoh configuration entries (`"path/to/key": value`), applied last.
    #[serde(default)]
    pub zenoh: BTreeMap<String, serde_json::Value>,
}

fn default_true() -> bool {
    true
}

fn default_discovery_ms() -> u64 {
    100
}

impl BridgeConfig {
    /// A bridge of `region` that forwards nothing yet, with Zenoh's defaults.
    pub fn new(region: &str) -> BridgeConfig {
        BridgeConfig {
            region: region.into(),
            outbound: Vec::new(),
            inbound: Vec::new(),
            mode: ZenohMode::Peer,
            listen: Vec::new(),
            connect: Vec::new(),
            multicast_scouting: true,
            key_prefix: None,
            origin: None,
            congestion: Congestion::Block,
            express: false,
            region_shape: RegionShape::default(),
            discovery_interval_ms: default_discovery_ms(),
            zenoh: BTreeMap::new(),
        }
    }

    /// Reads a JSON5 file (the format is described on [`BridgeConfig`]) and checks it.
    ///
    /// # Errors
    /// [`Error::File`] if it cannot be read; [`Error::Config`] for bad syntax, an unknown
    /// field, or a value [`BridgeConfig::validate`] refuses.
    pub fn from_file(path: impl AsRef<Path>) -> Result<BridgeConfig> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::File {
            path: path.into(),
            source,
        })?;
        BridgeConfig::from_json5(&text).map_err(|e| match e {
            Error::Config { what, reason } => Error::Config {
                what: format!("{}: {what}", path.display()),
                reason,
            },
            other => other,
        })
    }

    /// Parses the JSON5 form and checks it.
    ///
    /// # Errors
    /// As [`BridgeConfig::from_file`].
    pub fn from_json5(text: &str) -> Result<BridgeConfig> {
        let config: BridgeConfig = json5::from_str(text).map_err(|e| Error::Config {
            what: "JSON5".into(),
            reason: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// The configuration as JSON (which is JSON5 too): what [`BridgeConfig::from_json5`] reads.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a configuration serialises")
    }

    /// Adds an outbound pattern (region to Zenoh).
    ///
    /// # Errors
    /// [`Error::Config`] for a bad pattern (see [`Pattern`]).
    pub fn outbound(mut self, pattern: &str) -> Result<BridgeConfig> {
        self.outbound.push(Pattern::new(pattern)?);
        Ok(self)
    }

    /// Adds an inbound pattern (Zenoh to region). Patterns may overlap (`/orders/**` and
    /// `/orders/urgent`): a sample is handled once, by the first pattern in this list that
    /// matches its topic.
    ///
    /// # Errors
    /// [`Error::Config`] for a bad pattern (see [`Pattern`]).
    pub fn inbound(mut self, pattern: &str) -> Result<BridgeConfig> {
        self.inbound.push(Pattern::new(pattern)?);
        Ok(self)
    }

    /// Sets peer or client mode.
    pub fn mode(mut self, mode: ZenohMode) -> BridgeConfig {
        self.mode = mode;
        self
    }

    /// Adds an endpoint to listen on (`tcp/127.0.0.1:7447`).
    pub fn listen(mut self, endpoint: &str) -> BridgeConfig {
        self.listen.push(endpoint.into());
        self
    }

    /// Adds an endpoint to connect to.
    pub fn connect(mut self, endpoint: &str) -> BridgeConfig {
        self.connect.push(endpoint.into());
        self
    }

    /// Turns multicast scouting on or off.
    pub fn multicast_scouting(mut self, on: bool) -> BridgeConfig {
        self.multicast_scouting = on;
        self
    }

    /// Sets the key prefix.
    pub fn with_key_prefix(mut self, prefix: &str) -> BridgeConfig {
        self.key_prefix = Some(prefix.into());
        self
    }

    /// Sets the origin name.
    pub fn with_origin(mut self, origin: &str) -> BridgeConfig {
        self.origin = Some(origin.into());
        self
    }

    /// Sets the congestion policy.
    pub fn congestion(mut self, c: Congestion) -> BridgeConfig {
        self.congestion = c;
        self
    }

    /// Sets Zenoh's express flag (no batching).
    pub fn express(mut self, on: bool) -> BridgeConfig {
        self.express = on;
        self
    }

    /// Sets the shape of a region the bridge creates.
    pub fn region_shape(mut self, shape: RegionShape) -> BridgeConfig {
        self.region_shape = shape;
        self
    }

    /// Sets how often new outbound topics are looked for.
    pub fn discovery_interval(mut self, every: Duration) -> BridgeConfig {
        self.discovery_interval_ms = every.as_millis().max(1) as u64;
        self
    }

    /// Sets a raw Zenoh configuration entry (`"transport/link/tx/lease"`, a JSON value).
    pub fn zenoh_entry(mut self, key: &str, value: serde_json::Value) -> BridgeConfig {
        self.zenoh.insert(key.into(), value);
        self
    }

    /// The key prefix in use.
    pub fn key_prefix(&self) -> String {
        self.key_prefix
            .clone()
            .unwrap_or_else(|| format!("weft/{}", self.region))
    }

    /// The Zenoh key a topic path maps to (`/prices/AAPL` -> `weft/market/prices/AAPL`).
    pub fn key_for(&self, topic: &str) -> String {
        format!("{}{topic}", self.key_prefix())
    }

    /// The origin name in use: [`BridgeConfig::origin`], or by default
    /// `<hostname>/<machine id>/<region>`.
    ///
    /// The machine id (`/etc/machine-id`, else `/var/lib/dbus/machine-id`, else this boot's
    /// `/proc/sys/kernel/random/boot_id`) tells apart hosts that share a hostname (cloned
    /// images: `raspberrypi`), which would otherwise drop each other's samples of a region of
    /// the same name as looped. It is the same for every bridge of the host, so two bridges of
    /// one region still recognise each other's samples. Hosts cloned with their machine id
    /// too need an explicit `origin` each.
    ///
    /// # Examples
    /// ```
    /// use weft_zenoh::BridgeConfig;
    /// let robot = BridgeConfig::new("robot");
    /// assert!(robot.origin_name().ends_with("/robot"));
    /// assert_eq!(robot.origin_name(), BridgeConfig::new("robot").origin_name());
    /// assert_eq!(robot.with_origin("arm-1").origin_name(), "arm-1");
    /// ```
    pub fn origin_name(&self) -> String {
        self.origin.clone().unwrap_or_else(|| {
            let read = |path: &str| {
                std::fs::read_to_string(path)
                    .map(|h| h.trim().to_owned())
                    .ok()
                    .filter(|h| !h.is_empty())
            };
            let host = read("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".into());
            let machine = [
                "/etc/machine-id",
                "/var/lib/dbus/machine-id",
                "/proc/sys/kernel/random/boot_id",
            ]
            .into_iter()
            .find_map(read)
            .unwrap_or_default();
            format!("{host}/{machine}/{}", self.region)
        })
    }

    /// Checks every value that can be checked before anything is opened.
    ///
    /// # Errors
    /// [`Error::Config`] naming the value: an empty or slash-holding region name, a key prefix
    /// that is not a wildcard-free Zenoh key expression, an endpoint that is not
    /// `tcp/HOST:PORT` (this build has only the TCP transport), a client without a `connect`
    /// endpoint, a zero discovery interval, or a raw Zenoh entry Zenoh refuses.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String, reason: &str| {
            Err(Error::Config {
                what,
                reason: reason.into(),
            })
        };
        if self.region.is_empty() || self.region.contains('/') || self.region.len() > 200 {
            return bad(
                format!("region {:?}", self.region),
                "a region name is 1 to 200 bytes without '/'",
            );
        }
        let prefix = self.key_prefix();
        if prefix.is_empty()
            || prefix.starts_with('/')
            || prefix.ends_with('/')
            || prefix.split('/').any(str::is_empty)
            || prefix.contains(['*', '$', '?', '#'])
            || zenoh::key_expr::KeyExpr::try_from(prefix.as_str()).is_err()
        {
            return bad(
                format!("key prefix {prefix:?}"),
                "a key prefix is a Zenoh key expression without wildcards, \
                 empty chunks or leading/trailing '/'",
            );
        }
        for e in self.listen.iter().chain(&self.connect) {
            let ok = e.strip_prefix("tcp/").is_some_and(|addr| {
                addr.rsplit_once(':')
                    .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            }) && e.parse::<zenoh::config::EndPoint>().is_ok();
            if !ok {
                return bad(
                    format!("endpoint {e:?}"),
                    "an endpoint is tcp/HOST:PORT (this build of the bridge has the TCP transport only)",
                );
            }
        }
        if self.mode == ZenohMode::Client && self.connect.is_empty() && !self.multicast_scouting {
            return bad(
                "mode \"client\"".into(),
                "a client needs a router to connect to (connect) or multicast scouting to find one",
            );
        }
        if self.discovery_interval_ms == 0 {
            return bad(
                "discovery_interval_ms 0".into(),
                "the discovery interval is at least 1 ms",
            );
        }
        self.zenoh_config().map(|_| ())
    }

    /// The Zenoh configuration this bridge opens its session with.
    ///
    /// # Errors
    /// [`Error::Config`] when Zenoh refuses an entry.
    pub fn zenoh_config(&self) -> Result<zenoh::Config> {
        let mut c = zenoh::Config::default();
        let mut set = |key: &str, value: String| {
            c.insert_json5(key, &value).map_err(|e| Error::Config {
                what: format!("zenoh entry {key:?} = {value}"),
                reason: e.to_string(),
            })
        };
        fn json<T: Serialize + ?Sized>(v: &T) -> String {
            serde_json::to_string(v).expect("plain values serialise")
        }
        set("mode", json(self.mode.as_str()))?;
        if !self.listen.is_empty() {
            set("listen/endpoints", json(&self.listen))?;
        }
        if !self.connect.is_empty() {
            set("connect/endpoints", json(&self.connect))?;
        }
        set("scouting/multicast/enabled", json(&self.multicast_scouting))?;
        for (k, v) in &self.zenoh {
            set(k, v.to_string())?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_and_checked() {
        let dir = std::env::temp_dir().join(format!("weft-zenoh-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json5");
        std::fs::write(
            &good,
            "// a comment\n{ region: 'r', outbound: ['/a/**'], connect: ['tcp/127.0.0.1:7447'],\n  \
             mode: 'client', zenoh: { 'scouting/gossip/enabled': false }, }",
        )
        .unwrap();
        let c = BridgeConfig::from_file(&good).unwrap();
        assert_eq!(c.mode, ZenohMode::Client);
        assert_eq!(c.outbound[0].as_str(), "/a/**");
        assert!(c.multicast_scouting);
        assert_eq!(BridgeConfig::from_json5(&c.to_json()).unwrap(), c);

        for (text, needle) in [
            ("{ region: 'r', outbond: [] }", "unknown field"),
            ("{ outbound: [] }", "missing field"),
            ("{ region: 'r', outbound: ['/a*'] }", "wildcard"),
            (
                "{ region: 'r', listen: ['udp/127.0.0.1:7447'] }",
                "TCP transport only",
            ),
            (
                "{ region: 'r', listen: ['tcp/127.0.0.1'] }",
                "tcp/HOST:PORT",
            ),
            ("{ region: 'r', key_prefix: 'a/*' }", "key prefix"),
            ("{ region: 'r', key_prefix: '/a' }", "key prefix"),
            ("{ region: 'a/b' }", "region"),
            ("{ region: 'r', mode: 'router' }", "unknown variant"),
            (
                "{ region: 'r', mode: 'client', multicast_scouting: false }",
                "router",
            ),
            (
                "{ region: 'r', zenoh: { 'no/such/key': 1 } }",
                "no/such/key",
            ),
        ] {
            let e = BridgeConfig::from_json5(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
        let missing = BridgeConfig::from_file(dir.join("absent.json5")).unwrap_err();
        assert!(matches!(missing, Error::File { .. }), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
