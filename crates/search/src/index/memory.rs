//! What an index costs in memory, for the debug line a snapshot build writes.

use super::{Index, Posting};

impl Index {
    /// About how many bytes of heap the index holds (capacities, not what the allocator
    /// rounds them to), for the debug line a snapshot build writes: the index is the
    /// largest part of a big catalogue's memory that no setting bounds.
    pub fn heap_bytes(&self) -> usize {
        self.terms.heap_bytes()
            + self.surface.heap_bytes()
            + self.slug_rank.capacity() * size_of::<u32>()
            + self.idf.capacity() * size_of::<f32>()
            + self.peak.capacity() * size_of::<f32>()
            + self.postings.capacity() * size_of::<Posting>()
            + self.starts.capacity() * size_of::<u32>()
            + self.typos.heap_bytes()
    }
}
