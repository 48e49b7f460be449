"""Query parameters and response shapes of the Call tree page's API."""

from rest_framework import serializers

MAX_OCCURRENCES = 1000


def _ids(text: str, field: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise serializers.ValidationError(
            f"Give {field} as numbers separated by commas, e.g. 1,2."
        ) from None


class CallTreeQuerySerializer(serializers.Serializer):
    part = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="one part; left out: every part of the process ``rank`` and ``node`` name "
        "(a collector job's chunks), by default the job's first (lowest rank)",
    )
    rank = serializers.IntegerField(required=False, min_value=0)
    node = serializers.CharField(
        required=False, help_text="with ``rank``; left out: the first node running that rank"
    )
    threads = serializers.CharField(
        required=False,
        help_text="track ids (for several parts: indexes in ``threads``), comma-separated; "
        "left out: the thread that ran the training steps (holding the most step events) in "
        "each part, else every host thread",
    )
    inverted = serializers.BooleanField(
        required=False, default=False, help_text="bottom-up: frames with self time first"
    )
    min_ns = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        help_text='frames with less total time are merged into their parent\'s "(other)"',
    )

    def validate_threads(self, value: str) -> list[int]:
        threads = _ids(value, "threads")
        if not threads:
            raise serializers.ValidationError("Choose at least one thread.")
        return threads


class CallTreeOccurrencesQuerySerializer(CallTreeQuerySerializer):
    path = serializers.CharField(
        help_text="the frame's name ids (``name_ids``) from the top of the tree, comma-separated"
    )
    limit = serializers.IntegerField(
        required=False, default=100, min_value=1, max_value=MAX_OCCURRENCES
    )

    def validate_path(self, value: str) -> list[int]:
        path = _ids(value, "path")
        if not path:
            raise serializers.ValidationError("Give the frame's path.")
        if any(i < 0 for i in path):
            raise serializers.ValidationError(
                '"(other)" merges several small frames: lower the minimum time to list them.'
            )
        return path


class CallTreePartSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    node = serializers.CharField()
    rank = serializers.IntegerField()
    offset_ns = serializers.IntegerField(
        allow_null=True, help_text="where the part's first event lies from the job's first"
    )
    span_ns = serializers.IntegerField(
        allow_null=True, help_text="from the part's first event to the end of its last"
    )


class CallTreeThreadSerializer(serializers.Serializer):
    track = serializers.IntegerField()
    label = serializers.CharField()  # type: ignore[assignment]
    events = serializers.IntegerField(help_text="host events (operators, annotations, …)")
    steps = serializers.IntegerField(help_text="training steps (ProfilerStep#n, step annotations)")


class CallTreeFramesSerializer(serializers.Serializer):
    """Frames as parallel arrays; a parent comes before its children."""

    parent = serializers.ListField(child=serializers.IntegerField(), help_text="-1: a root")  # type: ignore[assignment]
    name = serializers.ListField(child=serializers.IntegerField(), help_text="index in names")
    total_ns = serializers.ListField(child=serializers.IntegerField())
    self_ns = serializers.ListField(child=serializers.IntegerField())
    count = serializers.ListField(child=serializers.IntegerField())


class CallTreeSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    part = serializers.IntegerField(allow_null=True, help_text="null for a process's parts")
    rank = serializers.IntegerField(
        allow_null=True, help_text="the process whose parts the tree sums; null for one part"
    )
    node = serializers.CharField(allow_null=True)
    summed_parts = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="the parts the tree sums: a process's parts where the profiler recorded "
        "something (not a collector chunk of annotations only), its latest "
        "max_summed_parts at most",
    )
    max_summed_parts = serializers.IntegerField(
        help_text="the most parts a process's tree sums (its latest ones)"
    )
    parts = CallTreePartSerializer(many=True)
    threads = CallTreeThreadSerializer(many=True)
    selected = serializers.ListField(child=serializers.IntegerField())
    inverted = serializers.BooleanField()
    window = serializers.CharField()
    window_label = serializers.CharField(
        help_text="what the window holds, as the other pages caption it (a collector job's "
        "captured steps: the tree holds what Kineto recorded)"
    )
    total_ns = serializers.IntegerField(help_text="time of the roots, before pruning")
    frames = serializers.IntegerField(help_text="frames before pruning")
    names = serializers.ListField(child=serializers.CharField(allow_blank=True))
    name_ids = serializers.ListField(
        child=serializers.IntegerField(), help_text="each name's id, for occurrence paths"
    )
    tree = CallTreeFramesSerializer()


class CallTreeOccurrenceSerializer(serializers.Serializer):
    start_ns = serializers.CharField(help_text="unix ns, as text (beyond 2^53)")
    offset_ns = serializers.IntegerField(
        help_text="from the part's start (the first part's, for a process's parts)"
    )
    dur_ns = serializers.IntegerField()
    self_ns = serializers.IntegerField()
    track = serializers.IntegerField()
    thread = serializers.CharField()
    event = serializers.CharField(help_text="the timeline's event id")
    timeline_url = serializers.CharField()


class CallTreeOccurrencesSerializer(serializers.Serializer):
    part = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()
    results = CallTreeOccurrenceSerializer(many=True)
