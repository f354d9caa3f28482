package simulate

// The lab's deliberately broken modes (internal/modes): each command a separate step, as the
// mode sends it, so a fault or another client can come between any two.

// setnxKind is mode setnx: SETNX with no expiry, polled; released by a blind DEL.
type setnxKind struct{ base }

func (setnxKind) acquire(s *Sim, w *World, c *Client) {
	if n, _ := asInt(s.cmd(w, c, 0, "SETNX", lockName, c.Value)); n == 1 {
		s.enter(w, c, 0)
		return
	}
	s.retryOrGiveUp(w, c)
}

func (setnxKind) release(s *Sim, w *World, c *Client) {
	s.cmd(w, c, 0, "DEL", lockName)
	s.released(w, c)
}

// setnxExpireKind is mode setnx-expire: SETNX, then PEXPIRE as a second command.
type setnxExpireKind struct{ setnxKind }

func (setnxExpireKind) acquire(s *Sim, w *World, c *Client) {
	if c.Sub == 1 {
		s.cmd(w, c, 0, "PEXPIRE", lockName, itoa(ms(s.cfg.Lease)))
		s.enter(w, c, 0)
		return
	}
	if n, _ := asInt(s.cmd(w, c, 0, "SETNX", lockName, c.Value)); n == 1 {
		c.Sub = 1
		return
	}
	s.retryOrGiveUp(w, c)
}

// setnxExKind is mode setnx-ex: SET NX PX, released by a blind DEL.
type setnxExKind struct{ setnxKind }

func (setnxExKind) acquire(s *Sim, w *World, c *Client) {
	if r := s.cmd(w, c, 0, "SET", lockName, c.Value, "NX", "PX", itoa(ms(s.cfg.Lease))); r == "OK" {
		s.enter(w, c, 0)
		return
	}
	s.retryOrGiveUp(w, c)
}

// uuidKind is mode uuid: SET NX PX with a unique value; released by GET, compare, then DEL as
// separate commands.
type uuidKind struct{ setnxExKind }

func (uuidKind) release(s *Sim, w *World, c *Client) {
	if c.Sub == 1 {
		s.cmd(w, c, 0, "DEL", lockName)
		s.released(w, c)
		return
	}
	if v := s.cmd(w, c, 0, "GET", lockName); v != c.Value {
		s.released(w, c) // not ours any more: nothing deleted
		return
	}
	c.Sub = 1
}

// noneKind is mode none: no lock at all. Each client reads the resource, works and writes it back
// (the lab's read-check-write of the stock); nothing is sent to Redis.
type noneKind struct{ base }

func (noneKind) acquire(s *Sim, w *World, c *Client) {
	s.note(w, c.name(), "no lock taken", "-")
	s.enter(w, c, 0)
}

func (noneKind) release(s *Sim, w *World, c *Client) {
	s.note(w, c.name(), "no lock to release", "-")
	s.released(w, c)
}

func init() {
	kinds["none"] = noneKind{}
	kinds["setnx"] = setnxKind{}
	kinds["setnx-expire"] = setnxExpireKind{}
	kinds["setnx-ex"] = setnxExKind{}
	kinds["uuid"] = uuidKind{}
}
