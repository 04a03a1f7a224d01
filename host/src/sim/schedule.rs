//! The order in which the simulated GPU resumes a block's runnable threads: a permutation drawn
//! from a seed (splitmix64), so that a schedule that showed a fault replays from its seed alone.
//! Seed 0 keeps thread order.

/// A seeded sequence of orders.
#[derive(Clone, Debug)]
pub struct Schedule {
    state: u64,
    shuffled: bool,
}

impl Schedule {
    /// The schedule of `seed`.
    pub fn new(seed: u64) -> Self {
        Schedule {
            state: seed,
            shuffled: seed != 0,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Puts `threads` in this schedule's next order (Fisher-Yates).
    pub fn shuffle(&mut self, threads: &mut [usize]) {
        if !self.shuffled {
            return;
        }
        for i in (1..threads.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            threads.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_its_orders_and_another_differs() {
        let orders = |seed| {
            let mut s = Schedule::new(seed);
            (0..4)
                .map(|_| {
                    let mut v: Vec<usize> = (0..64).collect();
                    s.shuffle(&mut v);
                    v
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(orders(7), orders(7));
        assert_ne!(orders(7), orders(8));
        assert_eq!(orders(0)[0], (0..64).collect::<Vec<_>>());
        let mut sorted = orders(7)[0].clone();
        sorted.sort();
        assert_eq!(sorted, (0..64).collect::<Vec<_>>(), "a permutation");
    }
}
