"""The timeline: a track tree per job and level-of-detail viewport queries over per-part indexes.

Everything here except ``logic``, ``views``, ``serializers`` and ``urls`` is pure (numpy and
pyarrow only, no Django).
"""
