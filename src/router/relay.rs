//! The lines the router passes on as they came: runs and single lines to the peer, with
//! `--linger`'s copies for the clients that joined a session and the updates kept for a
//! session no client has; and the bridge's own notifications.

use bytes::Bytes;

use super::{Out, Outbox, Router, Side};

impl Router {
    /// A run of `n` lines only forwarded (`data[start..end]`, each with its `\n`), to the
    /// other peer as one slice.
    pub(super) fn forward_run(
        &mut self,
        from: Side,
        data: &Bytes,
        run: Option<(usize, usize, u64)>,
        out: &mut Outbox,
    ) {
        let Some((start, end, n)) = run else { return };
        if from == Side::Agent && self.clients.any() {
            self.fan_out_run(data, start, end, out);
        }
        if from == Side::Agent && self.cfg.linger {
            return self.forward_agent_run(data, start, end, out);
        }
        let run = Out::Run(data.slice(start..end));
        match from {
            Side::Client => {
                self.counters.forwarded_to_agent += n;
                out.to_agent.push_back(run);
            }
            Side::Agent => {
                self.counters.forwarded_to_client += n;
                out.to_client.push_back(run);
            }
        }
    }

    /// A notification of the bridge's own for the client.
    pub(in crate::router) fn notify_client(&mut self, line: Bytes, out: &mut Outbox) {
        self.requests.sent_own_notification();
        out.client(line);
    }

    pub(super) fn count_dropped(&mut self, from: Side) {
        match from {
            Side::Client => self.counters.rejected_from_client += 1,
            Side::Agent => self.counters.dropped_from_agent += 1,
        }
    }

    pub(in crate::router) fn forward(&mut self, from: Side, line: Bytes, out: &mut Outbox) {
        match from {
            Side::Client => {
                self.counters.forwarded_to_agent += 1;
                out.to_agent.push_back(Out::Line(line));
            }
            Side::Agent => {
                if self.clients.any() {
                    self.fan_out(&line, out);
                }
                if self.cfg.linger && self.kept_instead(&line) {
                    return;
                }
                self.counters.forwarded_to_client += 1;
                out.to_client.push_back(Out::Line(line));
            }
        }
    }
}
