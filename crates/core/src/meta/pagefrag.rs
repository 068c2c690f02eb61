//! The write memory of upstream Linux's MPTCP socket as `mptcp_sendmsg` charges it
//! (net/mptcp/protocol.c, Linux 6.x).
//!
//! The application's data is copied into page fragments, not into segments. Each copy step
//! runs while the socket's charged memory (`sk_wmem_queued`) is below its send buffer
//! (`mptcp_send_limit`) and copies up to the end of the current page: a step that starts
//! just under the limit copies a whole page's rest, so a blocking writer ends up to a page
//! over the buffer. A step that cannot append to the pending tail fragment
//! (`mptcp_frag_can_collapse_to`: the tail must hold data not yet pushed to a subflow and end
//! where the page's free part starts) carves a new fragment: a 40-byte
//! `struct mptcp_data_frag` header at the next 8-byte boundary of the page, charged with the
//! data (`dfrag->overhead`) until the fragment is fully data-acknowledged (`dfrag_clear`);
//! data-acknowledged bytes of a fragment are uncharged at once (`dfrag_uncharge`). The page
//! is 32 KiB (`SKB_FRAG_PAGE_ORDER`) and is reused from its start once no fragment holds it
//! (`skb_page_frag_refill`: `page_ref_count == 1`).
//!
//! Measured on Linux 6.18 with `ss -tniM -m` in the emulator's server namespace: a first
//! 64 KiB `write` went in as two fragments of 32,728 bytes, each charged 32,768 (docs/
//! fidelity.md). A plain TCP socket charges `skb->truesize` instead; the simulator keeps
//! bytes there (its single-path cells agree with the kernel within 0.3%).

use std::collections::VecDeque;

/// `SKB_FRAG_PAGE_ORDER`: the page fragment `sk_page_frag` refills (32 KiB).
const PAGE: u64 = 32 * 1024;
/// `sizeof(struct mptcp_data_frag)` on x86-64: 32,768 − 32,728 bytes of data per page.
const DFRAG: u64 = 40;
/// `mptcp_page_frag_refill` asks for room for 32 bytes of data and a header.
const REFILL_MIN: u64 = 32 + DFRAG;

/// A data fragment not yet fully data-acknowledged.
#[derive(Clone, Copy, Debug)]
struct Frag {
    /// DSN one past its data.
    end: u64,
    /// Header and alignment charged with it.
    overhead: u64,
    /// The page it was carved from.
    page: u64,
}

/// The socket's page fragment (`sk->sk_frag` / the task's `task_frag`): its page (0: none
/// yet), where its free part starts, and the live fragments carved from it (its references
/// beyond the socket's).
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    page: u64,
    offset: u64,
    on_page: u32,
}

/// The page fragment and the live data fragments.
#[derive(Clone, Debug, Default)]
pub struct PageFrags {
    live: VecDeque<Frag>,
    /// Sum of the live fragments' overheads.
    overhead: u64,
    cur: Cursor,
}

impl Cursor {
    /// One copy step of at most `left` bytes. `pending`: the tail fragment holds data not yet
    /// pushed to a subflow (`msk->first_pending`); it is then the last one carved, so on the
    /// current page. Returns the bytes copied and, for a new fragment, its overhead.
    fn step(&mut self, left: u64, pending: bool) -> (u64, Option<u64>) {
        if pending && self.offset < PAGE {
            let n = left.min(PAGE - self.offset);
            self.offset += n;
            return (n, None);
        }
        // `skb_page_frag_refill`: the page is the socket's alone again, or has room left,
        // or a new one.
        let start = if self.page != 0 && self.on_page == 0 {
            0
        } else if self.page != 0 && self.offset + REFILL_MIN <= PAGE {
            self.offset
        } else {
            self.page += 1;
            self.on_page = 0;
            0
        };
        let aligned = start.next_multiple_of(8);
        let pos = aligned + DFRAG;
        let n = left.min(PAGE - pos);
        self.offset = pos + n;
        self.on_page += 1;
        (n, Some(aligned - start + DFRAG))
    }
}

impl PageFrags {
    /// Header and alignment bytes charged beyond the data.
    pub fn overhead(&self) -> u64 {
        self.overhead
    }

    /// Bytes a blocking writer with more than that to write copies before it blocks: steps
    /// while `charged` (the socket's `sk_wmem_queued`) is below `capacity`, each to the end
    /// of its page.
    pub fn copyable(&self, charged: u64, capacity: u64, pending: bool) -> u64 {
        let mut cur = self.cur;
        let mut charged = charged;
        let mut copied = 0;
        while charged < capacity {
            let (n, overhead) = cur.step(u64::MAX, pending || copied > 0);
            charged += n + overhead.unwrap_or(0);
            copied += n;
        }
        copied
    }

    /// The application copies `n` bytes starting at DSN `dsn` (at most what
    /// [`PageFrags::copyable`] allowed), in the kernel's steps.
    pub fn write(&mut self, dsn: u64, n: u64, pending: bool) {
        let mut done = 0;
        while done < n {
            let (k, carved) = self.cur.step(n - done, pending || done > 0);
            if let Some(overhead) = carved {
                self.live.push_back(Frag {
                    end: dsn + done,
                    overhead,
                    page: self.cur.page,
                });
                self.overhead += overhead;
            }
            if let Some(f) = self.live.back_mut() {
                f.end += k;
            }
            done += k;
        }
    }

    /// The end (DSN) of the live fragment holding `dsn`, if any: a push hands a subflow whole
    /// fragments (`__subflow_push_pending` checks its burst and the subflow's memory only
    /// between them).
    pub fn end_of(&self, dsn: u64) -> Option<u64> {
        let i = self.live.partition_point(|f| f.end <= dsn);
        self.live.get(i).map(|f| f.end)
    }

    /// The data-level ACK reached `data_ack`: fragments wholly below it are freed.
    pub fn on_data_ack(&mut self, data_ack: u64) {
        while let Some(f) = self.live.front() {
            if f.end > data_ack {
                break;
            }
            self.overhead -= f.overhead;
            if f.page == self.cur.page {
                self.cur.on_page -= 1;
            }
            self.live.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_write_fills_pages_of_32728_bytes_each_charged_32768() {
        // `ss -tniM -m` on Linux 6.18: a 64 KiB write went in as two 32,728-byte fragments.
        let mut f = PageFrags::default();
        // A MiB of buffer takes 32 whole pages: the 64 KiB write goes in whole.
        assert_eq!(f.copyable(0, 1 << 20, false), 32 * 32_728);
        f.write(0, 65_536, false);
        assert_eq!(f.overhead(), 3 * DFRAG);
        assert_eq!(
            f.live.iter().map(|f| f.end).collect::<Vec<_>>(),
            [32_728, 65_456, 65_536]
        );
    }

    #[test]
    fn a_writer_just_under_the_buffer_copies_the_rest_of_its_page() {
        // 50,176 bytes of buffer: the first step charges 32,768 (< 50,176), the second copies
        // another whole page, overshooting by 15,360 bytes (the kernel's `w` 65,536 over `tb`
        // 50,176 at the start of a download).
        let f = PageFrags::default();
        assert_eq!(f.copyable(0, 50_176, false), 65_456);
    }

    #[test]
    fn a_write_after_everything_was_pushed_carves_a_new_fragment_on_the_same_page() {
        let mut f = PageFrags::default();
        f.write(0, 1_000, false);
        assert_eq!(f.overhead(), DFRAG);
        // Pushed (no pending tail): a new header at the next 8-byte boundary of the page.
        f.write(1_000, 500, false);
        assert_eq!(f.overhead(), 2 * DFRAG);
        assert_eq!(f.cur.offset, 1_040 + 40 + 500);
        // Pending: appended to the tail.
        f.write(1_500, 100, true);
        assert_eq!(f.overhead(), 2 * DFRAG);
        // Alignment: the page's free part starts at 1,680, a multiple of 8 already; after 3
        // more bytes it does not.
        f.write(1_600, 3, true);
        f.write(1_603, 10, false);
        assert_eq!(f.overhead(), 2 * DFRAG + 5 + DFRAG);
    }

    #[test]
    fn a_push_finds_the_end_of_the_fragment_it_is_in() {
        let mut f = PageFrags::default();
        f.write(0, 65_536, false);
        assert_eq!(f.end_of(0), Some(32_728));
        assert_eq!(f.end_of(32_727), Some(32_728));
        assert_eq!(f.end_of(32_728), Some(65_456));
        assert_eq!(f.end_of(65_500), Some(65_536));
        assert_eq!(f.end_of(65_536), None, "not written yet");
        f.on_data_ack(32_728);
        assert_eq!(f.end_of(40_000), Some(65_456));
    }

    #[test]
    fn fragments_are_uncharged_when_fully_acknowledged_and_the_page_is_reused() {
        let mut f = PageFrags::default();
        f.write(0, 1_000, false);
        f.write(1_000, 1_000, false);
        f.on_data_ack(999);
        assert_eq!(
            f.overhead(),
            2 * DFRAG,
            "the first fragment is not wholly acknowledged"
        );
        f.on_data_ack(1_000);
        assert_eq!(f.overhead(), DFRAG);
        f.on_data_ack(2_000);
        assert_eq!(f.overhead(), 0);
        // No fragment holds the page: the next one starts at its beginning.
        f.write(2_000, 10, false);
        assert_eq!((f.cur.page, f.cur.offset), (1, DFRAG + 10));
    }
}
