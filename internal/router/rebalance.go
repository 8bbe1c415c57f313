package router

import (
	"math"
	"time"
)

// revokeReq asks the loop to let go of partitions and, for a revoke, to
// reply once their produces are done (or the deadline has passed).
type revokeReq struct {
	parts    map[string][]int32
	lost     bool
	deadline time.Time
	reply    chan struct{}
}

// releaseParts lets go of partitions being revoked or lost, and resumes
// them: a pause survives a revoke and a later re-assign. What a revoked
// partition holds is handed off (see handOff) so that its offsets can be
// committed in full and the next owner repeats nothing; what a lost
// partition holds is dropped, since its offsets cannot be committed anyway.
// Records of these partitions fetched from now on are not taken.
// answerRevokes waits for the produces in flight.
func (r *Router) releaseParts(parts map[string][]int32, lost bool) {
	resume := make(map[string][]int32)
	now := r.clock.Now()
	for topic, ps := range parts {
		for _, id := range ps {
			p, ok := r.parts[tp{topic, id}]
			if !ok {
				continue
			}
			p.leaving = true
			if lost {
				// Dropped: the offsets stay uncommitted, so the records
				// are read again by the next owner.
				for _, e := range r.takeHeld(p) {
					r.drop(e)
				}
				p.gone = true
			} else {
				r.handOff(p, now)
			}
			r.setPaused(p, false)
			resume[topic] = append(resume[topic], id)
		}
	}
	if len(resume) > 0 {
		r.member.Resume(resume)
	}
	if lost {
		r.ungate() // lets go of the gated entries of the lost partitions
	}
}

// handOff moves what p holds back into Kafka: each held record is produced
// to the delay topic of what is left of its delay (or forwarded, if due), as
// a hop would. Once those produces are acknowledged every record p fetched is
// done, so a graceful stop or rebalance commits everything and the next owner
// neither loses nor repeats a record.
//
// A record whose dead letter, or produce onward to an own topic, keeps
// being refused (stateRetry) cannot move, and the commit stops below it:
// the records after it are read again by the next owner, so they are
// dropped here rather than handed off, which would make them fire twice.
func (r *Router) handOff(p *partition, now time.Time) {
	held := r.takeHeld(p)
	stuck := int64(math.MaxInt64)
	for _, e := range held {
		if e.state == stateRetry {
			stuck = min(stuck, e.rec.Offset)
		}
	}
	for _, e := range held {
		if e.state == stateRetry || e.rec.Offset > stuck {
			r.drop(e)
			continue
		}
		r.unhold(e)
		r.stats.handedOff.Add(1)
		if remaining := e.meta.Due.Sub(now); remaining <= 0 {
			r.forward(e, now)
		} else {
			r.hop(e, r.cfg.Tiers.Pick(remaining), now)
		}
	}
}

// drop forgets an entry taken from the wake heap: its record is read again
// by the partition's next owner.
func (r *Router) drop(e *entry) {
	r.unhold(e)
	r.release(e)
}

// takeHeld removes every entry of p from the wake heap and returns them,
// still counted in their state (see unhold).
func (r *Router) takeHeld(p *partition) []*entry {
	var held []*entry
	for _, s := range r.wake {
		if s.e.part == p {
			held = append(held, s.e)
		}
	}
	for _, e := range held {
		r.wake.remove(e)
	}
	return held
}

// answerRevokes replies to the revokes whose partitions have nothing being
// produced, or whose deadline has passed (or all, with force), and forgets
// those partitions; the group member then commits their watermarks.
func (r *Router) answerRevokes(reqs []*revokeReq, force bool) []*revokeReq {
	if len(reqs) == 0 {
		return reqs
	}
	now := time.Now() // revoke deadlines are wall-clock, like the group's
	keep := reqs[:0]
	for _, req := range reqs {
		drained := true
		for topic, ps := range req.parts {
			for _, id := range ps {
				if p, ok := r.parts[tp{topic, id}]; ok && p.producing > 0 {
					drained = false
				}
			}
		}
		if !drained && !force && now.Before(req.deadline) {
			keep = append(keep, req)
			continue
		}
		r.forget(req.parts)
		close(req.reply)
	}
	return keep
}

// forget drops partitions from the router: their produces still in flight
// finish nothing.
func (r *Router) forget(parts map[string][]int32) {
	for topic, ps := range parts {
		for _, id := range ps {
			if p, ok := r.parts[tp{topic, id}]; ok {
				p.gone = true
				if p.paused {
					r.setPaused(p, false)
				}
				delete(r.parts, tp{topic, id})
			}
		}
	}
}

// letGo is the group member's Release: it hands a revoke or loss to the
// loop and returns once the loop has handed off what the partitions held and
// their produces finished, or the deadline has passed. A revoke that comes
// after the loop has returned (during the stop) needs nothing more: the stop
// handed everything off.
func (r *Router) letGo(parts map[string][]int32, lost bool, deadline time.Time) {
	req := &revokeReq{parts: parts, lost: lost, deadline: deadline, reply: make(chan struct{})}
	select {
	case r.revokes <- req:
	case <-r.loopDone:
		return
	}
	// Wake the loop at the deadline, in case no produce result does.
	kick := time.AfterFunc(time.Until(deadline), func() {
		select {
		case r.doneSig <- struct{}{}:
		default:
		}
	})
	defer kick.Stop()
	// The loop answers after the drain or the deadline, and always before it
	// returns.
	<-req.reply
}
