//! The paired devices and the pairing codes of the remote listener, kept in the inbox's
//! state folder so that `inbox pair` and `inbox devices` work beside a running inbox:
//! - `devices.json`: each device's name, the SHA-256 of its token (never the token), and
//!   when it was paired;
//! - `pairing.json`: the SHA-256 of each pairing code not yet used, and when it expires;
//! - `push.json`: each device's Web Push subscription (at most one a device), by the
//!   SHA-256 of its token, dropped with the device.
//!
//! Invariants: the folder is 0700 and every file 0600; every change is a read, modify and
//! atomic rename under `state.lock` (an exclusive `flock`), so the CLI and the inbox never
//! lose each other's writes; a code is removed in the same locked change that pairs a device
//! with it, so it pairs at most one; a token or code is compared only by its hash.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How long a pairing code is good for, unless `inbox pair --ttl` says otherwise.
pub const PAIR_TTL: Duration = Duration::from_secs(5 * 60);
/// The longest device name.
pub const MAX_NAME: usize = 64;

/// One paired device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub name: String,
    /// SHA-256 of its token, hex.
    pub token_sha256: String,
    /// Unix seconds.
    pub paired_at: u64,
}

/// A device's Web Push subscription (what the browser's `PushSubscription` gave it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    /// SHA-256 of the token of the device that subscribed, hex.
    pub device_sha256: String,
    /// The push service's URL for this browser.
    pub endpoint: String,
    /// The browser's P-256 public key, base64url (uncompressed point).
    pub p256dh: String,
    /// The browser's 16-byte authentication secret, base64url.
    pub auth: String,
    /// Unix seconds.
    pub subscribed_at: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Code {
    sha256: String,
    /// Unix seconds.
    expires_at: u64,
}

/// Why a pairing is refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PairError {
    #[error("the pairing code is unknown, used already, or expired")]
    BadCode,
    #[error("a device name is 1 to {MAX_NAME} characters, without control characters")]
    BadName,
    #[error("a device named {0:?} is paired already (revoke it first, or pick another name)")]
    NameTaken(String),
    #[error("the state folder: {0}")]
    Io(String),
}

/// The state folder of the remote listener.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// SHA-256 of `secret`, hex.
pub fn sha256_hex(secret: &str) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Unix seconds of `now`.
pub(super) fn now_secs(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Whether `name` can name a device.
pub fn valid_name(name: &str) -> bool {
    let n = name.trim();
    !n.is_empty() && n.chars().count() <= MAX_NAME && !n.chars().any(char::is_control)
}

impl Store {
    /// The store in `dir`, made (0700) if it is not there.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The store in `dir` as it is, to read only: nothing is made or changed (`doctor`).
    pub fn existing(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `f` holding the folder's lock.
    fn locked<T>(&self, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join("state.lock"))?;
        let _lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| std::io::Error::from(e))?;
        f()
    }

    fn read<T: for<'de> Deserialize<'de> + Default>(&self, file: &str) -> std::io::Result<T> {
        match std::fs::read(self.dir.join(file)) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(e) => Err(e),
        }
    }

    /// Writes `file` (0600) by a rename, so a reader sees the old or the new whole.
    pub(super) fn write(&self, file: &str, bytes: &[u8]) -> std::io::Result<()> {
        crate::private_file::replace(&self.dir.join(file), bytes)
    }

    fn write_json<T: Serialize>(&self, file: &str, value: &T) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(value)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.write(file, &bytes)
    }

    /// The paired devices.
    pub fn devices(&self) -> std::io::Result<Vec<Device>> {
        self.read("devices.json")
    }

    /// A fresh pairing code, good once for `ttl` from `now` ([`PAIR_TTL`] unless the person
    /// asks otherwise). Expired codes are dropped on the way.
    pub fn new_code(&self, now: SystemTime, ttl: Duration) -> std::io::Result<String> {
        let code = crate::control::random_token()
            .map_err(|e| std::io::Error::other(e.to_string()))?[..32]
            .to_owned();
        self.locked(|| {
            let mut codes: Vec<Code> = self.read("pairing.json")?;
            codes.retain(|c| c.expires_at > now_secs(now));
            codes.push(Code {
                sha256: sha256_hex(&code),
                expires_at: now_secs(now + ttl),
            });
            self.write_json("pairing.json", &codes)
        })?;
        Ok(code)
    }

    /// Trades `code` for a device named `name`: its token, to be kept by the device only.
    /// A refused name leaves the code unspent, so the person can pick another.
    pub fn pair(&self, code: &str, name: &str, now: SystemTime) -> Result<String, PairError> {
        let name = name.trim();
        if !valid_name(name) {
            return Err(PairError::BadName);
        }
        let token = crate::control::random_token().map_err(|e| PairError::Io(e.to_string()))?;
        let io = |e: std::io::Error| PairError::Io(e.to_string());
        self.locked(|| {
            let mut codes: Vec<Code> = self.read("pairing.json")?;
            let mut devices = self.devices()?;
            let hash = sha256_hex(code);
            let Some(at) = codes
                .iter()
                .position(|c| c.sha256 == hash && c.expires_at > now_secs(now))
            else {
                return Ok(Err(PairError::BadCode));
            };
            if devices.iter().any(|d| d.name == name) {
                return Ok(Err(PairError::NameTaken(name.to_owned())));
            }
            codes.remove(at);
            codes.retain(|c| c.expires_at > now_secs(now));
            self.write_json("pairing.json", &codes)?;
            devices.push(Device {
                name: name.to_owned(),
                token_sha256: sha256_hex(&token),
                paired_at: now_secs(now),
            });
            self.write_json("devices.json", &devices)?;
            Ok(Ok(token.clone()))
        })
        .map_err(io)?
    }

    /// Removes the device `name`, and its push subscription; false when there is none.
    pub fn revoke(&self, name: &str) -> std::io::Result<bool> {
        self.locked(|| {
            let mut devices = self.devices()?;
            let Some(at) = devices.iter().position(|d| d.name == name) else {
                return Ok(false);
            };
            let gone = devices.remove(at);
            let mut subs = self.subscriptions()?;
            subs.retain(|s| s.device_sha256 != gone.token_sha256);
            self.write_json("push.json", &subs)?;
            self.write_json("devices.json", &devices)?;
            Ok(true)
        })
    }

    /// The push subscriptions.
    pub fn subscriptions(&self) -> std::io::Result<Vec<Subscription>> {
        self.read("push.json")
    }

    /// Keeps `sub` as its device's one subscription, if the device is still paired.
    pub fn subscribe(&self, sub: Subscription) -> std::io::Result<bool> {
        self.locked(|| {
            if !self
                .devices()?
                .iter()
                .any(|d| d.token_sha256 == sub.device_sha256)
            {
                return Ok(false);
            }
            let mut subs = self.subscriptions()?;
            subs.retain(|s| s.device_sha256 != sub.device_sha256 && s.endpoint != sub.endpoint);
            subs.push(sub);
            self.write_json("push.json", &subs)?;
            Ok(true)
        })
    }

    /// Drops the subscriptions that `which` picks; how many went.
    pub fn unsubscribe(&self, which: impl Fn(&Subscription) -> bool) -> std::io::Result<usize> {
        self.locked(|| {
            let mut subs = self.subscriptions()?;
            let before = subs.len();
            subs.retain(|s| !which(s));
            if subs.len() != before {
                self.write_json("push.json", &subs)?;
            }
            Ok(before - subs.len())
        })
    }

    /// The contents of `file`, made by `make` (and kept, 0600) the first time.
    pub fn kept_secret(
        &self,
        file: &str,
        make: impl FnOnce() -> std::io::Result<Vec<u8>>,
    ) -> std::io::Result<Vec<u8>> {
        self.locked(|| match std::fs::read(self.dir.join(file)) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let bytes = make()?;
                self.write(file, &bytes)?;
                Ok(bytes)
            }
            Err(e) => Err(e),
        })
    }
}

/// The device a token belongs to, among `devices`.
pub fn device_of<'a>(devices: &'a [Device], token: &str) -> Option<&'a Device> {
    let hash = sha256_hex(token);
    devices
        .iter()
        .find(|d| crate::control::gate::same_secret(d.token_sha256.as_bytes(), hash.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(name: &str) -> Store {
        let dir = std::env::temp_dir().join(format!(
            "aqb-devices-{name}-{}-{}",
            std::process::id(),
            now_secs(SystemTime::now())
        ));
        let _ = std::fs::remove_dir_all(&dir);
        Store::open(&dir).unwrap()
    }

    #[test]
    fn a_code_pairs_one_device_once_and_only_before_it_expires() {
        let s = store("once");
        let t0 = SystemTime::now();
        let code = s.new_code(t0, PAIR_TTL).unwrap();
        let token = s.pair(&code, "Ada's phone", t0).unwrap();
        let devices = s.devices().unwrap();
        assert_eq!(device_of(&devices, &token).unwrap().name, "Ada's phone");
        assert!(device_of(&devices, "not the token").is_none());
        // The token itself is nowhere in the folder.
        for f in ["devices.json", "pairing.json"] {
            let text = std::fs::read_to_string(s.dir().join(f)).unwrap();
            assert!(!text.contains(&token) && !text.contains(&code), "{f}");
        }
        // Used once.
        assert_eq!(s.pair(&code, "Eve", t0), Err(PairError::BadCode));
        // Expired.
        let late = s.new_code(t0, PAIR_TTL).unwrap();
        let after = t0 + PAIR_TTL + Duration::from_secs(1);
        assert_eq!(s.pair(&late, "Bob", after), Err(PairError::BadCode));
        // A taken or bad name leaves the code for another try.
        let code = s.new_code(t0, PAIR_TTL).unwrap();
        assert_eq!(
            s.pair(&code, "Ada's phone", t0),
            Err(PairError::NameTaken("Ada's phone".into()))
        );
        assert_eq!(s.pair(&code, "\u{7}", t0), Err(PairError::BadName));
        assert!(s.pair(&code, "Ada's tablet", t0).is_ok());
    }

    #[test]
    fn revoking_removes_the_device_and_its_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let s = store("revoke");
        let code = s.new_code(SystemTime::now(), PAIR_TTL).unwrap();
        let token = s.pair(&code, "phone", SystemTime::now()).unwrap();
        let sub = |device: &str, endpoint: &str| Subscription {
            device_sha256: device.into(),
            endpoint: endpoint.into(),
            p256dh: String::new(),
            auth: String::new(),
            subscribed_at: 0,
        };
        // Only a paired device subscribes, once: a new subscription replaces its old one.
        assert!(!s.subscribe(sub("not a device", "https://a")).unwrap());
        assert!(s.subscribe(sub(&sha256_hex(&token), "https://a")).unwrap());
        assert!(s.subscribe(sub(&sha256_hex(&token), "https://b")).unwrap());
        assert_eq!(s.subscriptions().unwrap().len(), 1);
        assert_eq!(mode(&s.dir().join("push.json")), 0o600);
        assert!(s.revoke("phone").unwrap());
        assert!(
            s.subscriptions().unwrap().is_empty(),
            "revoked with its device"
        );
        assert!(!s.revoke("phone").unwrap());
        assert!(device_of(&s.devices().unwrap(), &token).is_none());
        assert_eq!(mode(s.dir()), 0o700);
        assert_eq!(mode(&s.dir().join("devices.json")), 0o600);
        assert_eq!(mode(&s.dir().join("pairing.json")), 0o600);
    }
}
