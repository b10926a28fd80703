//! Bounded memories of what just ended (oldest forgotten first): the ids of finished
//! requests, so a late or duplicate response is recognized instead of forwarded, and facts
//! about ended questions (who resolved them), so a late answer is reported with what it was
//! late for.

use std::collections::{HashMap, VecDeque};

use crate::envelope::{IdSet, RequestId};

/// How many resolved client ids are remembered to recognize late answers.
pub const RECENTLY_RESOLVED: usize = 4096;

/// A bounded set of recently finished request ids (oldest forgotten first), to recognize a
/// late or duplicate response instead of forwarding it.
#[derive(Debug, Default)]
pub struct RecentIds {
    order: VecDeque<RequestId>,
    set: IdSet<RequestId>,
}

impl RecentIds {
    pub fn contains(&self, id: &RequestId) -> bool {
        self.set.contains(id)
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    pub fn insert(&mut self, id: RequestId) {
        if self.set.insert(id.clone()) {
            self.order.push_back(id);
            if self.order.len() > RECENTLY_RESOLVED {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    /// Forgets `id` (it is in use again).
    pub fn remove(&mut self, id: &RequestId) {
        if self.set.remove(id) {
            self.order.retain(|x| x != id);
        }
    }
}

/// A bounded map of recent facts (oldest forgotten first), e.g. who resolved a question, so
/// a late answer can be reported with what it was late for.
#[derive(Debug)]
pub struct RecentMap<K, V> {
    order: VecDeque<K>,
    map: HashMap<K, V>,
    limit: usize,
}

impl<K: std::hash::Hash + Eq + Clone, V> RecentMap<K, V> {
    pub fn new(limit: usize) -> Self {
        Self {
            order: VecDeque::new(),
            map: HashMap::new(),
            limit,
        }
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k)
    }

    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.map.get_mut(k)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn insert(&mut self, k: K, v: V) {
        if self.map.insert(k.clone(), v).is_none() {
            self.order.push_back(k);
            if self.order.len() > self.limit {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }

    /// Forgets `k` (a scan of the order only when it is there).
    pub fn remove(&mut self, k: &K) {
        if self.map.remove(k).is_some() {
            self.order.retain(|o| o != k);
        }
    }

    /// Like [`RecentMap::insert`], but a key already there gets the new value.
    pub fn insert_or_replace(&mut self, k: K, v: V) {
        match self.map.get_mut(&k) {
            Some(old) => *old = v,
            None => self.insert(k, v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_map_forgets_the_oldest() {
        let mut m = RecentMap::new(2);
        m.insert(1, "a");
        m.insert(2, "b");
        m.insert(1, "c");
        assert_eq!(m.get(&1), Some(&"c"));
        m.insert(3, "d");
        assert_eq!(m.get(&1), None);
        assert_eq!((m.get(&2), m.get(&3), m.len()), (Some(&"b"), Some(&"d"), 2));
    }
}
