//! The race detector's shadow memory (issue 12): one [`Shadow`] cell per 4-byte word while every access
//! to the memory has covered whole aligned words, one per byte from the first access that does not.
//!
//! Word cells are exact, not an approximation: as long as every access covers whole words, the four bytes
//! of a word have gone through the same accesses, so their per-byte states would be equal; the race
//! check's outcome for an access is the same for each of its bytes, decided once per word. The first
//! access that covers part of a word splits every cell into four equal byte cells, after which the shadow
//! is the per-byte one it always was. Word accesses (nearly all of them) thus move a quarter of the shadow
//! bytes, and the shadow takes 6 bytes per byte of memory instead of 24.

use super::Shadow;

/// Shadow cells of one memory (a global allocation or a block's shared memory).
#[derive(Debug, Clone, Default)]
pub(crate) struct ShadowMem {
    /// Bytes of memory covered.
    len: usize,
    /// One cell per byte (after a partial-word access) instead of one per 4-byte word.
    bytes: bool,
    cells: Vec<Shadow>,
}

impl ShadowMem {
    /// Fresh (no access yet) cells for `len` bytes, in word mode.
    pub(crate) fn new(len: usize) -> ShadowMem {
        ShadowMem {
            len,
            bytes: false,
            cells: vec![Shadow::default(); len.div_ceil(4)],
        }
    }

    /// Forgets every access (a new launch), keeping the allocation of the cells where it can.
    pub(crate) fn reset(&mut self, len: usize) {
        self.len = len;
        self.bytes = false;
        self.cells.clear();
        self.cells.resize(len.div_ceil(4), Shadow::default());
    }

    /// Forgets the accesses to bytes `off .. off + size` (clipped to the memory): memory `free` returned
    /// and `malloc` handed out again is new memory, ordered after its last owner's accesses by the heap.
    pub(crate) fn forget(&mut self, off: usize, size: usize) {
        let end = (off + size).min(self.len);
        if off >= end {
            return;
        }
        let cells = if self.bytes {
            &mut self.cells[off..end]
        } else {
            &mut self.cells[off / 4..end.div_ceil(4)]
        };
        cells.fill(Shadow::default());
    }

    /// Bytes of memory covered.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The cells of bytes `off .. off + size` (in bounds, `size` ≥ 1), in address order: one per word
    /// while the shadow is in word mode and the access covers whole words, else one per byte.
    #[inline]
    pub(crate) fn cells(&mut self, off: usize, size: usize) -> &mut [Shadow] {
        if !self.bytes && !(off | size).is_multiple_of(4) {
            self.split();
        }
        if self.bytes {
            &mut self.cells[off..off + size]
        } else {
            &mut self.cells[off / 4..(off + size) / 4]
        }
    }

    /// All cells, one per 4-byte word, while the shadow is in word mode (`None` after a split).
    #[inline]
    pub(crate) fn words(&mut self) -> Option<&mut [Shadow]> {
        (!self.bytes).then_some(&mut self.cells[..])
    }

    /// The cell of byte `i` (in bounds).
    pub(crate) fn get(&self, i: usize) -> Shadow {
        if self.bytes {
            self.cells[i]
        } else {
            self.cells[i / 4]
        }
    }

    /// Word cells to byte cells: each byte gets its word's state (equal by the word-mode invariant).
    #[cold]
    fn split(&mut self) {
        let words = std::mem::take(&mut self.cells);
        self.cells = (0..self.len).map(|i| words[i / 4]).collect();
        self.bytes = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_cells_split_into_equal_byte_cells() {
        let mut m = ShadowMem::new(10);
        assert_eq!(m.cells(0, 8).len(), 2);
        m.cells(4, 4)[0].w_pc = 7;
        // A one-byte access splits the shadow: bytes 4..8 keep their word's state, the rest are fresh.
        assert_eq!(m.cells(9, 1).len(), 1);
        assert_eq!(m.cells(0, 8).len(), 8);
        for i in 0..10 {
            assert_eq!(
                m.get(i).w_pc,
                if (4..8).contains(&i) { 7 } else { 0 },
                "{i}"
            );
        }
        m.reset(10);
        assert_eq!(m.cells(4, 4).len(), 1);
        assert_eq!(m.get(5), Shadow::default());
    }
}
