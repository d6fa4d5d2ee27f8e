//! Places shared fairly by the parties a server runs for: the JavaScript runs at once
//! (`js/pool.rs`) and the REPL sessions (`nyxilum/repl.rs`) are few, and one caller must
//! not hold them all.
//!
//! A [`Party`] is opaque text the caller's layer chooses (a key's id, an anonymous
//! caller's network, an MCP session), so exec knows nothing of keys, addresses or MCP.
//!
//! **The rule of a [`Pool`].** A party may take a free place only while it holds fewer
//! places than are free: so one party holds at most half of the places, two at most
//! three quarters, and `k` parties together leave `capacity / 2^k` free for the next —
//! with the default 4 JavaScript places (their heap budget, `limits`), one principal
//! holds 2, a second 1, and a third still starts at once. A run that may not take a place
//! waits; when a place is freed it goes to the waiting run whose party holds the fewest
//! places (the first come among equals), so a newcomer is not queued behind the runs of
//! a party that already holds some. A run of no party ([`Party::alone`], a server with
//! one client) takes any free place.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// Whom a run is made for, as the shared places see it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Party(Option<Arc<str>>);

impl Party {
    /// The party named `name` (any text; two runs of the same name are one party).
    pub fn named(name: impl Into<Arc<str>>) -> Party {
        Party(Some(name.into()))
    }

    /// No party: the runs of a server with one client (stdio), which shares its places
    /// with no one and so takes any that is free.
    pub fn alone() -> Party {
        Party(None)
    }

    /// Its name, or `None` for [`Party::alone`].
    pub fn name(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// A fixed number of places handed out by the rule of this module.
#[derive(Debug, Clone)]
pub struct Pool {
    state: Arc<Mutex<State>>,
    capacity: usize,
}

#[derive(Debug)]
struct State {
    free: usize,
    /// Places held, by party (parties holding none are absent).
    held: HashMap<Arc<str>, usize>,
    /// Runs waiting for a place, oldest first.
    waiting: VecDeque<Waiter>,
    next: u64,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    party: Party,
    grant: oneshot::Sender<Permit>,
}

/// One place, given back (and handed on) when dropped.
#[derive(Debug)]
pub struct Permit {
    state: Arc<Mutex<State>>,
    party: Party,
}

impl State {
    fn held_by(&self, party: &Party) -> usize {
        party.0.as_ref().and_then(|p| self.held.get(p)).copied().unwrap_or(0)
    }

    /// Returns true if and only if `party` may take a free place now.
    fn may_take(&self, party: &Party) -> bool {
        self.free > 0 && (party.0.is_none() || self.held_by(party) < self.free)
    }

    fn take(&mut self, party: &Party) {
        self.free -= 1;
        if let Some(p) = &party.0 {
            *self.held.entry(p.clone()).or_insert(0) += 1;
        }
    }

    fn give_back(&mut self, party: &Party) {
        self.free += 1;
        if let Some(p) = &party.0
            && let Some(n) = self.held.get_mut(p)
        {
            *n -= 1;
            if *n == 0 {
                self.held.remove(p);
            }
        }
    }

    /// Hands free places to the waiting runs that may take them, fewest held first.
    /// A permit whose run stopped waiting meanwhile comes back in `unsent`, to be
    /// dropped (and so given back) once the lock is released.
    fn hand_on(&mut self, state: &Arc<Mutex<State>>, unsent: &mut Vec<Permit>) {
        loop {
            let next = self
                .waiting
                .iter()
                .enumerate()
                .filter(|(_, w)| self.may_take(&w.party))
                .min_by_key(|(i, w)| (self.held_by(&w.party), *i))
                .map(|(i, _)| i);
            let Some(waiter) = next.and_then(|i| self.waiting.remove(i)) else {
                return;
            };
            self.take(&waiter.party);
            let permit = Permit {
                state: state.clone(),
                party: waiter.party,
            };
            if let Err(permit) = waiter.grant.send(permit) {
                unsent.push(permit);
            }
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut unsent = Vec::new();
        {
            let mut state = lock(&self.state);
            state.give_back(&self.party);
            state.hand_on(&self.state, &mut unsent);
        }
        drop(unsent);
    }
}

/// Takes a run out of the queue if it stops waiting (its future dropped).
struct Leave<'a> {
    state: &'a Arc<Mutex<State>>,
    id: Option<u64>,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            lock(self.state).waiting.retain(|w| w.id != id);
        }
    }
}

impl Pool {
    /// A pool of `capacity` places (at least one).
    pub fn new(capacity: usize) -> Pool {
        let capacity = capacity.max(1);
        Pool {
            state: Arc::new(Mutex::new(State {
                free: capacity,
                held: HashMap::new(),
                waiting: VecDeque::new(),
                next: 0,
            })),
            capacity,
        }
    }

    /// Its places.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Places held now.
    pub fn in_use(&self) -> usize {
        self.capacity - lock(&self.state).free
    }

    /// A place for a run of `party`, waited for as long as it takes (the caller bounds
    /// the wait). `None` only if the pool's state was lost, which does not happen.
    pub async fn acquire(&self, party: &Party) -> Option<Permit> {
        let (id, granted) = {
            let mut state = lock(&self.state);
            if state.may_take(party) {
                state.take(party);
                return Some(Permit {
                    state: self.state.clone(),
                    party: party.clone(),
                });
            }
            let (grant, granted) = oneshot::channel();
            let id = state.next;
            state.next += 1;
            state.waiting.push_back(Waiter {
                id,
                party: party.clone(),
                grant,
            });
            (id, granted)
        };
        let mut leave = Leave {
            state: &self.state,
            id: Some(id),
        };
        let permit = granted.await.ok();
        leave.id = None;
        permit
    }

    /// The place of a run of `party` when it may take one now, without waiting.
    pub fn try_acquire(&self, party: &Party) -> Option<Permit> {
        let mut state = lock(&self.state);
        if !state.may_take(party) {
            return None;
        }
        state.take(party);
        Some(Permit {
            state: self.state.clone(),
            party: party.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn party(name: &str) -> Party {
        Party::named(name)
    }

    #[tokio::test]
    async fn one_party_holds_half_two_hold_three_quarters_and_a_third_still_gets_one() {
        let pool = Pool::new(4);
        let (a, b, c) = (party("a"), party("b"), party("c"));
        let held_a: Vec<Permit> = std::iter::from_fn(|| pool.try_acquire(&a)).collect();
        assert_eq!(held_a.len(), 2, "half of four");
        let held_b: Vec<Permit> = std::iter::from_fn(|| pool.try_acquire(&b)).collect();
        assert_eq!(held_b.len(), 1);
        let c1 = pool.try_acquire(&c).expect("a third party starts at once");
        assert!(pool.try_acquire(&c).is_none());
        assert_eq!(pool.in_use(), 4);
        drop((held_a, held_b, c1));
        assert_eq!(pool.in_use(), 0);
        let eight = Pool::new(8);
        let held: Vec<Permit> = std::iter::from_fn(|| eight.try_acquire(&a)).collect();
        assert_eq!(held.len(), 4);
        let alone: Vec<Permit> = std::iter::from_fn(|| eight.try_acquire(&Party::alone())).collect();
        assert_eq!(alone.len(), 4, "a run of no party takes any free place");
    }

    #[tokio::test]
    async fn a_freed_place_goes_to_the_waiting_party_holding_fewest() {
        let pool = Pool::new(2);
        let (a, b) = (party("a"), party("b"));
        let first = pool.acquire(&a).await.unwrap();
        let other = pool.acquire(&b).await.unwrap();
        // Both full: a's second run queues first, then b's.
        let (pool_a, pool_b) = (pool.clone(), pool.clone());
        let (a2, b2) = (a.clone(), b.clone());
        let waiting_a = tokio::spawn(async move { pool_a.acquire(&a2).await.map(|p| p.party.clone()) });
        while lock(&pool.state).waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        let waiting_b = tokio::spawn(async move { pool_b.acquire(&b2).await.map(|p| p.party.clone()) });
        while lock(&pool.state).waiting.len() < 2 {
            tokio::task::yield_now().await;
        }
        // b gives its place back: a holds one, b none, so b's waiting run gets it.
        drop(other);
        assert_eq!(waiting_b.await.unwrap(), Some(b.clone()));
        drop(first);
        assert_eq!(waiting_a.await.unwrap(), Some(a.clone()));
    }

    #[tokio::test]
    async fn a_run_that_stops_waiting_leaves_the_queue_and_holds_nothing() {
        let pool = Pool::new(1);
        let a = party("a");
        let held = pool.acquire(&Party::alone()).await.unwrap();
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(1), pool.acquire(&a)).await;
        assert!(gave_up.is_err());
        assert!(lock(&pool.state).waiting.is_empty());
        drop(held);
        assert_eq!(pool.in_use(), 0);
        assert!(pool.try_acquire(&a).is_some());
    }
}
