from collector.capture import Phase, schedule_phase

N, W, R, S = Phase.NONE, Phase.WARMUP, Phase.RECORD, Phase.RECORD_AND_SAVE


def phases(steps, **kw):
    args = {"skip_first": 1, "warmup": 1, "active": 2, "wait": 3, "repeat": 0} | kw
    return [schedule_phase(s, **args) for s in range(steps)]


def test_it_captures_a_window_early_then_waits():
    assert phases(12) == [N, W, R, S, N, N, N, W, R, S, N, N]


def test_it_stops_after_the_requested_repeats():
    assert phases(12, repeat=1) == [N, W, R, S] + [N] * 8


def test_it_can_profile_every_step():
    assert phases(6, skip_first=0, warmup=0, active=1, wait=0) == [S] * 6
    assert phases(5, skip_first=0, warmup=1, active=2, wait=0) == [W, R, S, W, R]
