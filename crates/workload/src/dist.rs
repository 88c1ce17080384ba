//! Key-choice distributions: uniform, zipfian (YCSB's generator, after Gray
//! et al., "Quickly generating billion-record synthetic databases"),
//! scrambled zipfian (popular items spread over the key space), and latest.

use crate::rng::Rng;

/// Murmur3's 64-bit finalizer: a bijection on u64 (every step is
/// invertible), so distinct inputs give distinct outputs.
#[inline]
pub fn scramble(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// YCSB's zipfian generator over items `0..n`: item 0 is the most popular.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipf {
    /// A generator over `n` items (n ≥ 1) with exponent `theta` (0 < θ < 1;
    /// YCSB uses 0.99). Computing ζ(n) costs O(n) once.
    pub fn new(n: u64, theta: f64) -> Zipf {
        let n = n.max(1);
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2.min(n), theta);
        let eta = if n > 2 {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        } else {
            1.0
        };
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    /// The next item.
    pub fn next(&self, r: &mut Rng) -> u64 {
        let u = r.f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.n - 1);
        }
        let v = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.n - 1)
    }

    /// The probability of item `i` (0 for items past the last): the
    /// distribution the generator approximates, 1 / ((i+1)^θ ζ(n)).
    pub fn pmf(&self, i: u64) -> f64 {
        if i >= self.n {
            return 0.0;
        }
        1.0 / ((i + 1) as f64).powf(self.theta) / self.zetan
    }

    /// θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }
}

/// How a workload picks which existing item to touch.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    /// Every item equally likely.
    Uniform,
    /// Zipfian popularity, popular items scattered over the key space.
    ScrambledZipf(Zipf),
    /// The newest items most popular (zipfian distance from the newest).
    Latest(Zipf),
}

crate::named! {
    /// The key-choice distributions, by their YCSB names.
    pub enum Distribution: "distribution" {
        /// Every item equally likely.
        Uniform = "uniform",
        /// Scrambled zipfian.
        Zipfian = "zipfian",
        /// The newest items most popular.
        Latest = "latest",
    }
}

impl KeyChooser {
    /// Builds a chooser for `n` items (θ for the zipfian ones).
    pub fn new(d: Distribution, n: u64, theta: f64) -> KeyChooser {
        match d {
            Distribution::Uniform => KeyChooser::Uniform,
            Distribution::Zipfian => KeyChooser::ScrambledZipf(Zipf::new(n, theta)),
            Distribution::Latest => KeyChooser::Latest(Zipf::new(n, theta)),
        }
    }

    /// Picks an item in `0..count` (count ≥ 1: the items that exist now).
    #[inline]
    pub fn pick(&self, r: &mut Rng, count: u64) -> u64 {
        let count = count.max(1);
        match self {
            KeyChooser::Uniform => r.below(count),
            KeyChooser::ScrambledZipf(z) => scramble(z.next(r)) % count,
            KeyChooser::Latest(z) => count - 1 - z.next(r).min(count - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scramble_is_injective_on_a_range() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..100_000u64 {
            assert!(seen.insert(scramble(i)));
        }
    }

    #[test]
    fn zipf_head_matches_theory() {
        // P(item 0) = 1/ζ(n); for n = 1000, θ = 0.99, ζ ≈ 7.4.
        let z = Zipf::new(1000, 0.99);
        let mut r = Rng::new(5);
        let n = 200_000;
        let zeros = (0..n).filter(|_| z.next(&mut r) == 0).count();
        let want = 1.0 / zeta(1000, 0.99);
        let got = zeros as f64 / n as f64;
        assert!((got - want).abs() < 0.01, "P(0) = {got}, want {want}");
    }

    #[test]
    fn latest_prefers_newest() {
        let c = KeyChooser::new(Distribution::Latest, 1000, 0.99);
        let mut r = Rng::new(1);
        let newest = (0..10_000).filter(|_| c.pick(&mut r, 1000) == 999).count();
        assert!(newest > 1000, "{newest}");
    }
}
