//! Tile schedules for the table-driven instances of the persistent kernels (`GROUP_M` = 0 in
//! [`super::tile_at`]): the order in which a persistent grid visits the tiles
//! of `C`, as a device table of `(tile row << 16) | tile column` entries that the host builds once per shape
//! and checks before any kernel reads it.

use super::hilbert::hilbert_order;
use super::GemmError;
use prism_runtime::{Device, DeviceBuffer};

/// A tile order for a `tiles_m × tiles_n` grid of tiles, in device memory: every tile exactly once (checked
/// when it is built). Build one per shape with [`TileSchedule::hilbert`] (or any order with
/// [`TileSchedule::from_order`]) and pass it to [`super::gemm_bf16_with_schedule`] or
/// [`super::gemm_bf16_out_bf16_with_schedule`] for every call on that shape; the calls without one build a
/// Hilbert schedule each time (a small host-to-device copy).
///
/// ```
/// use prism_kernels::gemm::{gemm_bf16_with_schedule, GemmBf16Variant, TileSchedule};
/// use prism_runtime::{half::bf16, Device};
/// let dev = Device::auto()?;
/// let (m, n, k) = (300u32, 264u32, 16u32);
/// let v = GemmBf16Variant::PersistentHilbert256;
/// let (tm, tn) = v.schedule_grid(m, n).expect("a table-driven variant");
/// let sched = TileSchedule::hilbert(&dev, tm, tn)?;
/// assert_eq!(sched.grid(), (3, 2));
/// let a = dev.htod(&vec![bf16::from_f32(1.0); (m * k) as usize])?;
/// let b = dev.htod(&vec![bf16::from_f32(0.5); (n * k) as usize])?;
/// let mut c = dev.alloc_zeros::<f32>((m * n) as usize)?;
/// gemm_bf16_with_schedule(&dev, v, Some(&sched), m, n, k, 1.0, &a, &b, 0.0, &mut c)?;
/// assert!(dev.dtoh(&c)?.iter().all(|&x| x == 8.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TileSchedule {
    tiles_m: u32,
    tiles_n: u32,
    table: DeviceBuffer<u32>,
}

impl TileSchedule {
    /// The generalized Hilbert order of [`super::hilbert_order`] over a `tiles_m × tiles_n` grid.
    pub fn hilbert(dev: &Device, tiles_m: u32, tiles_n: u32) -> Result<Self, GemmError> {
        check_grid(tiles_m, tiles_n)?;
        Self::from_order(dev, tiles_m, tiles_n, &hilbert_order(tiles_m, tiles_n))
    }

    /// Any order of `(tile row, tile column)` pairs over a `tiles_m × tiles_n` grid. Refused
    /// ([`GemmError::Schedule`]) unless it names every tile of the grid exactly once, and each side is
    /// 1 ..= 65536 tiles (an entry packs each coordinate in 16 bits), at most 2^26 tiles in all.
    pub fn from_order(
        dev: &Device,
        tiles_m: u32,
        tiles_n: u32,
        order: &[(u32, u32)],
    ) -> Result<Self, GemmError> {
        let table = pack_order(tiles_m, tiles_n, order)?;
        Ok(TileSchedule {
            tiles_m,
            tiles_n,
            table: dev.htod(&table)?,
        })
    }

    /// `(tiles_m, tiles_n)`: the grid this schedule covers.
    pub fn grid(&self) -> (u32, u32) {
        (self.tiles_m, self.tiles_n)
    }

    /// The device table the kernels read: entry `t` is `(tile row << 16) | tile column` of the `t`-th tile.
    pub fn table(&self) -> &DeviceBuffer<u32> {
        &self.table
    }

    /// `Ok` when this schedule covers `grid`, the grid of the kernel about to read it.
    pub(crate) fn check_for(&self, grid: (u32, u32)) -> Result<(), GemmError> {
        if self.grid() == grid && self.table.len() as u64 == grid.0 as u64 * grid.1 as u64 {
            return Ok(());
        }
        Err(GemmError::Schedule(format!(
            "the schedule covers {} × {} tiles in {} entries, the sizes need {} × {}",
            self.tiles_m,
            self.tiles_n,
            self.table.len(),
            grid.0,
            grid.1
        )))
    }
}

fn check_grid(tiles_m: u32, tiles_n: u32) -> Result<(), GemmError> {
    if tiles_m == 0 || tiles_n == 0 || tiles_m > 1 << 16 || tiles_n > 1 << 16 {
        return Err(GemmError::Schedule(format!(
            "a {tiles_m} × {tiles_n} grid of tiles: each side must be 1 ..= 65536 tiles"
        )));
    }
    // The host builds the order and the table (4 bytes a tile): at most 2^26 tiles (a 256 MiB table,
    // a 2^33-row matrix of 128-row tiles), not the 2^32 the sides allow.
    if tiles_m as u64 * tiles_n as u64 > 1 << 26 {
        return Err(GemmError::Schedule(format!(
            "a {tiles_m} × {tiles_n} grid of tiles: more than 2^26 tiles in all"
        )));
    }
    Ok(())
}

/// `order` as table entries `(tile row << 16) | tile column`, after checking that it names every tile of
/// the `tiles_m × tiles_n` grid exactly once ([`GemmError::Schedule`] says which entry is wrong).
pub fn pack_order(tiles_m: u32, tiles_n: u32, order: &[(u32, u32)]) -> Result<Vec<u32>, GemmError> {
    check_grid(tiles_m, tiles_n)?;
    let tiles = tiles_m as u64 * tiles_n as u64;
    if order.len() as u64 != tiles {
        return Err(GemmError::Schedule(format!(
            "{} entries for a {tiles_m} × {tiles_n} grid of {tiles} tiles",
            order.len()
        )));
    }
    let mut seen = vec![false; order.len()];
    let mut table = Vec::with_capacity(order.len());
    for (i, &(tm, tn)) in order.iter().enumerate() {
        if tm >= tiles_m || tn >= tiles_n {
            return Err(GemmError::Schedule(format!(
                "entry {i}, tile ({tm}, {tn}), is outside the {tiles_m} × {tiles_n} grid"
            )));
        }
        let at = tm as usize * tiles_n as usize + tn as usize;
        if std::mem::replace(&mut seen[at], true) {
            return Err(GemmError::Schedule(format!(
                "entry {i}, tile ({tm}, {tn}), is named twice"
            )));
        }
        // tm, tn < 65536 (check_grid).
        table.push(tm << 16 | tn);
    }
    Ok(table)
}

/// The table a persistent kernel on `grid` reads: `given` after checking that it covers `grid`, else a
/// Hilbert schedule built into `owned`. A kernel that computes its order (`grid` is `None`, the grouped
/// instances) is passed an empty table, which it never reads; a schedule given to it is an error rather
/// than silently unused.
pub(crate) fn resolve<'a>(
    dev: &Device,
    name: &str,
    grid: Option<(u32, u32)>,
    given: Option<&'a TileSchedule>,
    owned: &'a mut Option<DeviceBuffer<u32>>,
) -> Result<&'a DeviceBuffer<u32>, GemmError> {
    match (grid, given) {
        // An empty buffer is a null pointer on the GPU: no allocation, nothing copied.
        (None, None) => Ok(owned.insert(dev.alloc_zeros(0)?)),
        (None, Some(_)) => Err(GemmError::Schedule(format!(
            "`{name}` takes no tile schedule (its order is computed in the kernel)"
        ))),
        (Some(grid), Some(s)) => {
            s.check_for(grid)?;
            Ok(s.table())
        }
        (Some((tm, tn)), None) => Ok(owned.insert(TileSchedule::hilbert(dev, tm, tn)?.table)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_checks_every_entry() {
        assert_eq!(
            pack_order(2, 3, &[(0, 0), (1, 2), (0, 1), (1, 1), (1, 0), (0, 2)]).unwrap(),
            vec![0, 1 << 16 | 2, 1, 1 << 16 | 1, 1 << 16, 2]
        );
        let bad = |order: &[(u32, u32)], want: &str| {
            let e = pack_order(2, 2, order).unwrap_err();
            assert!(
                matches!(&e, GemmError::Schedule(m) if m.contains(want)),
                "{order:?}: {e}"
            );
        };
        bad(&[(0, 0), (0, 1), (1, 0)], "3 entries");
        bad(&[(0, 0), (0, 1), (1, 0), (1, 1), (0, 0)], "5 entries");
        bad(
            &[(0, 0), (0, 1), (1, 0), (0, 1)],
            "entry 3, tile (0, 1), is named twice",
        );
        bad(
            &[(0, 0), (0, 1), (1, 0), (2, 1)],
            "entry 3, tile (2, 1), is outside",
        );
        bad(
            &[(0, 0), (0, 2), (1, 0), (1, 1)],
            "entry 1, tile (0, 2), is outside",
        );
        assert!(pack_order(0, 4, &[]).is_err());
        assert!(pack_order(1 << 17, 1, &[]).is_err());
    }
}
