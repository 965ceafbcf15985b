/**
 * The life of a native consumer group as one state and the one function that moves it. A group is `fresh`
 * until a member joins, then `joined`: its rings hold events meant for a consumer. `remove()` takes it out
 * of its topic (`removed`), and its lane is `freed` as soon as nothing names it: no member, no join in
 * progress, no member still leaving, and no consumer thread that has not exited (`idle`). A `freed` lane
 * is never named in a core call again, and `freed` is final.
 */
export type GroupState = 'fresh' | 'joined' | 'removed' | 'freed';

/**
 * What moves the state: a member joined (`join`), the transport took the group out of its topic (`remove`),
 * or something that kept the lane in use ended (`settle`: a join finished, a member left, a thread exited).
 */
export type GroupEvent = 'join' | 'remove' | 'settle';

/** The state after `event`, `idle` saying whether anything still uses the lane (see above). */
export function nextState(state: GroupState, event: GroupEvent, idle: boolean): GroupState {
  switch (state) {
    case 'fresh':
    case 'joined':
      if (event === 'join') return 'joined';
      if (event === 'remove') return idle ? 'freed' : 'removed';
      return state;
    case 'removed':
      return idle ? 'freed' : state;
    case 'freed':
      return state;
  }
}
