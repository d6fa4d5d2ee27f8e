//! A list of strings in one buffer: the index's terms and surface words. As a
//! `Vec<String>` each word cost a 24-byte header and an allocation of its own, made
//! while the build's scratch grew around it: at 100,000 synthetic tools the index's heap
//! went from 33 to 29 MB with this (the `--debug` build line).

/// Strings appended one after another; string `i` is `text[ends[i - 1]..ends[i]]`.
#[derive(Debug, Default)]
pub(super) struct Strings {
    text: String,
    ends: Vec<u32>,
}

impl Strings {
    /// An empty list with room for `count` strings of `bytes` bytes in all.
    pub(super) fn with_capacity(count: usize, bytes: usize) -> Strings {
        Strings {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(count),
        }
    }

    /// Appends `s`. The caller keeps the total under 4 GiB (the index's entry budget
    /// bounds it far below).
    pub(super) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(u32::try_from(self.text.len()).unwrap_or(u32::MAX));
    }

    /// How many strings there are.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// String `i`; empty past the end.
    pub(super) fn get(&self, i: usize) -> &str {
        let start = if i == 0 {
            0
        } else {
            self.ends.get(i - 1).copied().unwrap_or(0)
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.text.get(start as usize..end as usize).unwrap_or_default()
    }

    /// The first index whose string is not `before` (as `slice::partition_point`): the
    /// strings must be sorted so that `before` holds for a prefix of them.
    pub(super) fn partition_point(&self, before: impl Fn(&str) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bytes of heap held (capacities).
    pub(super) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_each_string_and_searches_sorted_ones() {
        let mut s = Strings::with_capacity(4, 8);
        for w in ["", "ab", "abc", "b"] {
            s.push(w);
        }
        assert_eq!(s.len(), 4);
        assert_eq!((0..4).map(|i| s.get(i)).collect::<Vec<_>>(), ["", "ab", "abc", "b"]);
        assert_eq!(s.get(9), "");
        assert_eq!(s.partition_point(|t| t < "abc"), 2);
        assert_eq!(s.partition_point(|t| t < "zz"), 4);
        assert_eq!(s.partition_point(|t| t < "a"), 1);
    }
}
