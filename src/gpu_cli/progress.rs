//! Progress of long work (`tessel tune`, `tessel run`, `tessel bench`): each step's line on
//! stdout as a plain line, and where stderr is a terminal, one status line on stderr rewritten in
//! place: `[k/total] what, elapsed m:ss, about m:ss left`. Elsewhere (pipes, CI logs) nothing but
//! the plain lines.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Back to the start of the line and clear to its end: the status line erased.
const CLEAR: &str = "\r\x1b[K";

/// The status line's most characters, so that it does not wrap on a terminal of 80 columns
/// (`\r` rewrites only the last row of a wrapped line).
const WIDTH: usize = 79;

/// Work of a known number of steps (more may be added, [`Progress::add_total`]), with its status
/// line on stderr where stderr is a terminal; the line is cleared at [`Progress::finish`] or when
/// dropped.
pub(super) struct Progress {
    total: usize,
    done: usize,
    what: String,
    start: Instant,
    /// Whether the status line is drawn: stderr is a terminal (not `TERM=dumb`), and not finished.
    live: bool,
    /// Whether the status line is on the terminal now.
    shown: bool,
}

impl Progress {
    /// `total` steps of `what` (the status line's words), started now; the status line drawn at
    /// once where stderr is a terminal.
    pub(super) fn new(total: usize, what: &str) -> Self {
        let live =
            std::io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
        let mut p = Progress {
            total,
            done: 0,
            what: what.to_string(),
            start: Instant::now(),
            live,
            shown: false,
        };
        p.draw();
        p
    }

    /// `n` steps more than the total said so far (work whose steps are known a part at a time).
    pub(super) fn add_total(&mut self, n: usize) {
        self.total += n;
        self.draw();
    }

    /// The status line's words from now on (e.g. the step under way).
    pub(super) fn set_what(&mut self, what: &str) {
        what.clone_into(&mut self.what);
        self.draw();
    }

    /// The steps done.
    pub(super) fn done(&self) -> usize {
        self.done
    }

    /// The steps in all, as known now.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// One step done, its `line` printed on stdout.
    pub(super) fn step(&mut self, line: &str) {
        self.done += 1;
        self.line(line);
    }

    /// One step done, with no line of its own (its lines came through [`Progress::line`]).
    pub(super) fn tick(&mut self) {
        self.done += 1;
        self.draw();
    }

    /// `line` printed on stdout with no step counted (a summary between steps), the status line
    /// cleared before it and drawn again after it.
    pub(super) fn line(&mut self, line: &str) {
        self.clear();
        println!("{line}");
        let _ = std::io::stdout().flush();
        self.draw();
    }

    /// The status line cleared for good; plain lines may follow without it.
    pub(super) fn finish(&mut self) {
        self.clear();
        self.live = false;
    }

    /// The status line erased, if it is shown.
    fn clear(&mut self) {
        if self.shown {
            eprint!("{CLEAR}");
            let _ = std::io::stderr().flush();
            self.shown = false;
        }
    }

    /// The status line written over the one shown, where it is drawn at all.
    fn draw(&mut self) {
        if self.live {
            let s = status(self.done, self.total, &self.what, self.start.elapsed());
            eprint!("{CLEAR}{s}");
            let _ = std::io::stderr().flush();
            self.shown = true;
        }
    }
}

impl Drop for Progress {
    /// The status line cleared (an early return leaves no half line behind).
    fn drop(&mut self) {
        self.finish();
    }
}

/// The time left after `done` of `total` steps took `elapsed`, at the same pace:
/// `elapsed / done * (total - done)`; `None` before the first step is done.
pub(super) fn eta(elapsed: Duration, done: usize, total: usize) -> Option<Duration> {
    if done == 0 {
        return None;
    }
    let left = total.saturating_sub(done) as u128;
    let nanos = elapsed.as_nanos() * left / done as u128;
    Some(Duration::from_nanos(
        u64::try_from(nanos).unwrap_or(u64::MAX),
    ))
}

/// `d` in whole seconds as a clock: `m:ss` under an hour, `h:mm:ss` from an hour on.
pub(super) fn clock(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The status line: `[done/total] what, elapsed m:ss, about m:ss left` (no time left before the
/// first step), cut to [`WIDTH`] characters.
pub(super) fn status(done: usize, total: usize, what: &str, elapsed: Duration) -> String {
    let mut s = format!("[{done}/{total}] {what}, elapsed {}", clock(elapsed));
    if let Some(left) = eta(elapsed, done, total) {
        s += &format!(", about {} left", clock(left));
    }
    match s.char_indices().nth(WIDTH) {
        Some((i, _)) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn time_left_at_the_pace_so_far() {
        assert_eq!(eta(secs(10), 0, 5), None);
        assert_eq!(eta(secs(10), 1, 5), Some(secs(40)));
        assert_eq!(eta(secs(30), 3, 4), Some(secs(10)));
        assert_eq!(eta(secs(12), 4, 4), Some(secs(0)));
        // steps past the total (a total that was too small) leave nothing
        assert_eq!(eta(secs(12), 5, 4), Some(secs(0)));
        assert_eq!(
            eta(Duration::from_millis(1500), 2, 7),
            Some(Duration::from_millis(3750))
        );
    }

    #[test]
    fn clocks() {
        assert_eq!(clock(secs(0)), "0:00");
        assert_eq!(clock(Duration::from_millis(59_999)), "0:59");
        assert_eq!(clock(secs(61)), "1:01");
        assert_eq!(clock(secs(3599)), "59:59");
        assert_eq!(clock(secs(3600)), "1:00:00");
        assert_eq!(clock(secs(36_000 + 62)), "10:01:02");
    }

    #[test]
    fn status_lines() {
        assert_eq!(status(0, 168, "run", secs(3)), "[0/168] run, elapsed 0:03");
        assert_eq!(
            status(42, 168, "copy_f32 1000003", secs(84)),
            "[42/168] copy_f32 1000003, elapsed 1:24, about 4:12 left"
        );
        let long = status(1, 2, &"x".repeat(200), secs(1));
        assert_eq!(long.chars().count(), WIDTH);
        assert!(long.starts_with("[1/2] xxx"));
    }

    #[test]
    fn counts_steps_and_totals() {
        let mut p = Progress::new(2, "test");
        p.add_total(3);
        assert_eq!((p.done(), p.total()), (0, 5));
        p.set_what("more");
        p.step("a step's line");
        assert_eq!((p.done(), p.total()), (1, 5));
        p.finish();
        assert!(!p.live && !p.shown);
    }
}
