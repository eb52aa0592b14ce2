//! A space-filling tile order for the persistent GEMMs (issue "bf16 Hopper GEMM", rung 5): a generalized
//! Hilbert curve over any `tiles_m × tiles_n` grid of tiles, not only powers of two. Pure host logic; the
//! kernels read the order from a table the host builds once per shape ([`super::TileSchedule`]).
//!
//! The construction is the published "generalized Hilbert" recursion (J. Červený's gilbert, 2019): a
//! rectangle spanned by a major axis `a` and a minor axis `b` is cut either into two halves along `a` (when
//! it is much longer than wide) or into three parts (a strip of `b / 2` walked crosswise, the remaining
//! rectangle walked along `a`, and the strip's mirror back), always entering at one corner of the major
//! edge and leaving at the other. Halves are rounded so that every part has an even side along the
//! direction it is walked where it can, which keeps consecutive cells edge-adjacent.
//!
//! A path over a grid that steps only between edge-adjacent cells alternates the two colours of a
//! checkerboard, so one from corner `(0, 0)` to corner `(len(a) - 1, 0)` exists only when `len(a)` is even
//! or both sides are odd. [`hilbert_order`] therefore takes an even side as the major axis when there is one
//! (and the longer side otherwise): then every step of the curve is to an edge-adjacent tile, for every
//! shape (the unit tests check all shapes up to 40 × 40 and some larger ones).

/// The tiles of a `tiles_m × tiles_n` grid as `(tile_m, tile_n)` pairs, in generalized Hilbert order: every
/// tile exactly once, and consecutive tiles share an edge. Empty when either side is 0.
///
/// ```
/// use prism_kernels::gemm::hilbert_order;
/// let order = hilbert_order(2, 2);
/// assert_eq!(order, vec![(0, 0), (1, 0), (1, 1), (0, 1)]);
/// assert_eq!(hilbert_order(3, 5).len(), 15);
/// ```
pub fn hilbert_order(tiles_m: u32, tiles_n: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(tiles_m as usize * tiles_n as usize);
    if tiles_m == 0 || tiles_n == 0 {
        return out;
    }
    // Curve coordinates: x runs along tile columns (n), y along tile rows (m).
    let (w, h) = (tiles_n as i64, tiles_m as i64);
    let major_is_x = match (w % 2 == 0, h % 2 == 0) {
        (true, false) => true,
        (false, true) => false,
        _ => w >= h,
    };
    let mut emit = |x: i64, y: i64| out.push((y as u32, x as u32));
    if major_is_x {
        walk(V(0, 0), V(w, 0), V(0, h), &mut emit);
    } else {
        walk(V(0, 0), V(0, h), V(w, 0), &mut emit);
    }
    out
}

/// A 2-vector of grid coordinates (one of the components of an axis is always 0).
#[derive(Clone, Copy)]
struct V(i64, i64);

impl V {
    fn add(self, o: V) -> V {
        V(self.0 + o.0, self.1 + o.1)
    }
    fn sub(self, o: V) -> V {
        V(self.0 - o.0, self.1 - o.1)
    }
    fn neg(self) -> V {
        V(-self.0, -self.1)
    }
    /// Cells along the axis.
    fn len(self) -> i64 {
        (self.0 + self.1).abs()
    }
    /// The unit step along the axis.
    fn unit(self) -> V {
        V(self.0.signum(), self.1.signum())
    }
    /// Half the axis, rounded towards minus infinity per component (the rounding the parity rules rely on).
    fn half(self) -> V {
        V(self.0.div_euclid(2), self.1.div_euclid(2))
    }
}

/// Visits the rectangle with corner `p`, major axis `a` and minor axis `b` (cell counts with signs), from
/// `p` to `p + a - unit(a)`.
fn walk(p: V, a: V, b: V, emit: &mut impl FnMut(i64, i64)) {
    let (w, h) = (a.len(), b.len());
    let (da, db) = (a.unit(), b.unit());
    if h == 1 || w == 1 {
        // A single row or column: walk it straight.
        let (step, len) = if h == 1 { (da, w) } else { (db, h) };
        let mut q = p;
        for _ in 0..len {
            emit(q.0, q.1);
            q = q.add(step);
        }
        return;
    }
    let (mut a2, mut b2) = (a.half(), b.half());
    if 2 * w > 3 * h {
        // Long and thin: two halves along the major axis, the first with an even length if possible.
        if a2.len() % 2 == 1 && w > 2 {
            a2 = a2.add(da);
        }
        walk(p, a2, b, emit);
        walk(p.add(a2), a.sub(a2), b, emit);
    } else {
        // Up the first `b2` of the minor axis, along the whole major axis above it, and back down.
        if b2.len() % 2 == 1 && h > 2 {
            b2 = b2.add(db);
        }
        walk(p, b2, a2, emit);
        walk(p.add(b2), a, b.sub(b2), emit);
        let back = p.add(a.sub(da)).add(b2.sub(db));
        walk(back, b2.neg(), a.sub(a2).neg(), emit);
    }
}

/// How much of `A` and `B` an order of tiles reads at a time: a persistent grid of `wave` blocks runs tiles
/// `wave · i .. wave · (i + 1)` of the order together (block `b` takes tiles `b, b + wave, ..`), and such a
/// wave reads one A panel (`bm` rows) per distinct tile row and one B panel (`bn` columns) per distinct
/// tile column. The mean over the waves of `distinct rows · bm + distinct columns · bn`: elements of A and
/// B per unit of `k` that L2 must hold for the wave to reuse them. Used to compare orders (tests,
/// docs/KERNELS.md).
pub fn wave_footprint(order: &[(u32, u32)], wave: usize, bm: u32, bn: u32) -> f64 {
    if order.is_empty() || wave == 0 {
        return 0.0;
    }
    let mut total = 0u64;
    let mut waves = 0u64;
    for chunk in order.chunks(wave) {
        let mut rows: Vec<u32> = chunk.iter().map(|t| t.0).collect();
        let mut cols: Vec<u32> = chunk.iter().map(|t| t.1).collect();
        rows.sort_unstable();
        rows.dedup();
        cols.sort_unstable();
        cols.dedup();
        total += rows.len() as u64 * bm as u64 + cols.len() as u64 * bn as u64;
        waves += 1;
    }
    total as f64 / waves as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tile exactly once, and every step to an edge-adjacent tile.
    fn check(tiles_m: u32, tiles_n: u32) {
        let order = hilbert_order(tiles_m, tiles_n);
        assert_eq!(
            order.len(),
            (tiles_m * tiles_n) as usize,
            "{tiles_m}×{tiles_n}: length"
        );
        let mut seen = vec![false; (tiles_m * tiles_n) as usize];
        for &(tm, tn) in &order {
            assert!(
                tm < tiles_m && tn < tiles_n,
                "{tiles_m}×{tiles_n}: ({tm}, {tn}) outside"
            );
            let i = (tm * tiles_n + tn) as usize;
            assert!(!seen[i], "{tiles_m}×{tiles_n}: ({tm}, {tn}) twice");
            seen[i] = true;
        }
        for (i, w) in order.windows(2).enumerate() {
            let d = w[0].0.abs_diff(w[1].0) + w[0].1.abs_diff(w[1].1);
            assert_eq!(
                d, 1,
                "{tiles_m}×{tiles_n}: step {i} from {:?} to {:?}",
                w[0], w[1]
            );
        }
    }

    #[test]
    fn every_shape_up_to_40_is_a_path_over_all_tiles() {
        for tiles_m in 1..=40 {
            for tiles_n in 1..=40 {
                check(tiles_m, tiles_n);
            }
        }
    }

    #[test]
    fn lines_odd_primes_and_large_grids() {
        for (tm, tn) in [
            (1, 1),
            (1, 97),
            (97, 1),
            (2, 131),
            (131, 2),
            (13, 17),
            (17, 13),
            (61, 59),
            (64, 32),
            (32, 64),
            (128, 128),
            (127, 255),
            (600, 7),
            (1000, 999),
        ] {
            check(tm, tn);
        }
        assert!(hilbert_order(0, 5).is_empty() && hilbert_order(5, 0).is_empty());
    }

    #[test]
    fn powers_of_two_give_the_classic_hilbert_curve() {
        // The 4 × 4 Hilbert curve: its quadrants in order, each a 2 × 2 curve, starting at a corner and
        // ending at the adjacent one.
        let order = hilbert_order(4, 4);
        let quadrant = |t: &(u32, u32)| (t.0 / 2, t.1 / 2);
        for q in order.chunks(4) {
            assert!(
                q.iter().all(|t| quadrant(t) == quadrant(&q[0])),
                "{order:?}"
            );
        }
        assert_eq!(order[0], (0, 0));
        assert_eq!(order[15], (0, 3));
    }

    #[test]
    fn a_wave_of_hilbert_tiles_reads_less_than_row_major_on_large_grids() {
        // 128 × 256 tiles, waves of 132 blocks (an H100's SMs): 8192², 6144², 4096 × 14336. (At 4096², 32 ×
        // 16 tiles, a row-major wave spans 8 whole tile rows and reads a little less: docs/KERNELS.md.)
        for (tm, tn) in [(64u32, 32u32), (48, 24), (32, 56)] {
            let hilbert = wave_footprint(&hilbert_order(tm, tn), 132, 128, 256);
            let row_major: Vec<(u32, u32)> = (0..tm * tn).map(|t| (t / tn, t % tn)).collect();
            let rows = wave_footprint(&row_major, 132, 128, 256);
            assert!(
                hilbert < 0.8 * rows,
                "{tm}×{tn}: hilbert {hilbert}, row-major {rows}"
            );
        }
    }
}
