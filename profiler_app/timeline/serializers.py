import re

from rest_framework import serializers

from profiler_app.timeline.pure.ranges import MAX_EVENTS, MAX_TRACKS
from profiler_app.timeline.pure.viewport import MAX_BUCKETS

# The most children of a group one page answers.
MAX_CHILDREN_PAGE = 1000


class NanosecondsField(serializers.CharField):
    """An integer nanosecond time written as a string: epoch nanoseconds do not fit the
    doubles that JavaScript (and JSON parsers) turn numbers into."""

    default_error_messages = {"invalid": "Enter a whole number of nanoseconds."}

    def to_internal_value(self, data) -> int:  # type: ignore[override]
        text = super().to_internal_value(data)
        if not re.fullmatch(r"-?\d{1,19}", text):
            self.fail("invalid")
        return int(text)


class TrackNodeSerializer(serializers.Serializer):
    """A node of the track tree; ``children`` holds more of the same."""

    id = serializers.CharField()
    # "label" and "data" shadow base-class attributes for the type checker only: the serializer
    # metaclass moves declared fields out of the class namespace.
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.CharField()
    data = serializers.ChoiceField(choices=["events", "counter"], allow_null=True)  # type: ignore[assignment]
    rows = serializers.IntegerField(required=False, help_text="Nesting depths of an event lane.")
    events = serializers.IntegerField(
        required=False, help_text="Events of an event lane, or below a collapsed group."
    )
    info = serializers.DictField(required=False)
    children = serializers.ListField(child=serializers.DictField(), required=False)
    children_count = serializers.IntegerField(
        required=False,
        help_text=(
            "Set on a collapsed group (more children than the tree answers at once): how many "
            "children it has, read a page at a time from tracks/children/; no children then."
        ),
    )
    lanes = serializers.IntegerField(
        required=False, help_text="Event lanes below a collapsed group."
    )


class TimelinePartSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    node = serializers.CharField()
    rank = serializers.IntegerField()
    pid = serializers.IntegerField(allow_null=True)


class StepMarkSerializer(serializers.Serializer):
    name = serializers.CharField()
    start_ns = serializers.CharField()
    dur_ns = serializers.IntegerField()


class TimelineTracksSerializer(serializers.Serializer):
    job = serializers.IntegerField()
    origin_ns = serializers.CharField(
        help_text="Integer ns (a string: JSON numbers lose precision)."
    )
    start_ns = serializers.CharField()
    end_ns = serializers.CharField()
    n_events = serializers.IntegerField()
    parts = TimelinePartSerializer(many=True)
    tracks = TrackNodeSerializer(many=True)
    steps = StepMarkSerializer(many=True, help_text="Steps of the first rank that has any.")


class TrackChildrenQuerySerializer(serializers.Serializer):
    group = serializers.CharField(help_text="Id of a group of the tree (a collapsed one).")
    offset = serializers.IntegerField(min_value=0, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_CHILDREN_PAGE, default=200)


class TrackChildrenSerializer(serializers.Serializer):
    group = serializers.CharField()
    count = serializers.IntegerField(help_text="Children of the group, in all.")
    offset = serializers.IntegerField()
    children = TrackNodeSerializer(many=True)


class ViewportQuerySerializer(serializers.Serializer):
    start_ns = NanosecondsField()
    end_ns = NanosecondsField()
    width_px = serializers.IntegerField(min_value=1, max_value=MAX_BUCKETS // 2)
    tracks = serializers.CharField(help_text="Comma-separated track ids of the tree.")

    def validate(self, attrs):
        if attrs["end_ns"] <= attrs["start_ns"]:
            raise serializers.ValidationError({"end_ns": ["must be after start_ns"]})
        return attrs


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(min_length=1, max_length=200)
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=100)


class FoundEventSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    start_ns = serializers.CharField()
    dur_ns = serializers.IntegerField()
    track = serializers.CharField()
    depth = serializers.IntegerField()


class FoundNameSerializer(serializers.Serializer):
    name = serializers.CharField()
    count = serializers.IntegerField()


class SearchResultSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    names = FoundNameSerializer(many=True)
    results = FoundEventSerializer(many=True)


class EventQuerySerializer(serializers.Serializer):
    id = serializers.RegexField(
        r"^\d+:@?\d+$",
        help_text='"<part id>:<event index>", or "<part id>:@<row of the part\'s store>" as '
        "insights findings name an event",
    )


class EventSerializer(serializers.Serializer):
    """The store's fields of one event; optional ones appear when recorded."""

    id = serializers.CharField()
    track = serializers.CharField()
    depth = serializers.IntegerField()
    part = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    start_ns = serializers.CharField()
    dur_ns = serializers.IntegerField()
    device = serializers.IntegerField(required=False)
    stream = serializers.IntegerField(required=False)
    correlation = serializers.IntegerField(required=False)
    external_id = serializers.IntegerField(required=False)
    bytes = serializers.IntegerField(required=False)
    memcpy_kind = serializers.CharField(required=False)
    grid = serializers.ListField(child=serializers.IntegerField(), required=False)
    block = serializers.ListField(child=serializers.IntegerField(), required=False)
    registers = serializers.IntegerField(required=False)
    shared_mem = serializers.IntegerField(required=False)
    occupancy_pct = serializers.FloatField(required=False)
    input_types = serializers.CharField(required=False)
    input_dims = serializers.CharField(required=False)
    collective = serializers.CharField(required=False)
    dtype = serializers.CharField(required=False)
    in_nelems = serializers.IntegerField(required=False)
    out_nelems = serializers.IntegerField(required=False)
    group_size = serializers.IntegerField(required=False)
    process_group = serializers.CharField(required=False)


class EventDetailsSerializer(serializers.Serializer):
    event = EventSerializer()
    launch = EventSerializer(allow_null=True)
    run = EventSerializer(allow_null=True)
    launch_latency_ns = serializers.IntegerField(
        required=False, help_text="From the launch call's start to the run's start."
    )
    queue_ns = serializers.IntegerField(
        required=False, help_text="From the launch call's end to the run's start."
    )


class ExportQuerySerializer(serializers.Serializer):
    start_ns = NanosecondsField(required=False)
    end_ns = NanosecondsField(required=False)


class RangeQuerySerializer(serializers.Serializer):
    start_ns = NanosecondsField()
    end_ns = NanosecondsField()
    tracks = serializers.CharField(
        help_text="Comma-separated track ids of the tree; a group stands for its lanes."
    )

    def validate(self, attrs):
        if attrs["end_ns"] <= attrs["start_ns"]:
            raise serializers.ValidationError({"end_ns": ["must be after start_ns"]})
        ids = [t for t in attrs["tracks"].split(",") if t]
        if not ids:
            raise serializers.ValidationError({"tracks": ["name at least one track"]})
        if len(ids) > MAX_TRACKS:
            raise serializers.ValidationError(
                {"tracks": [f"at most {MAX_TRACKS} tracks at once, not {len(ids)}"]}
            )
        attrs["track_ids"] = ids
        return attrs


class RangeEventsQuerySerializer(RangeQuerySerializer):
    name = serializers.CharField(max_length=2000)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_EVENTS, default=1000)


class RangeRowSerializer(serializers.Serializer):
    track = serializers.CharField()
    name = serializers.CharField()
    count = serializers.IntegerField()
    total_ns = serializers.IntegerField(help_text="Summed durations, clipped to the range.")
    self_ns = serializers.IntegerField(
        allow_null=True, help_text="CPU threads only: less the events nested directly inside."
    )
    avg_ns = serializers.FloatField()
    min_ns = serializers.IntegerField()
    max_ns = serializers.IntegerField()
    pct_of_range = serializers.FloatField()


class RangeTotalsSerializer(serializers.Serializer):
    start_ns = serializers.CharField()
    end_ns = serializers.CharField()
    tracks = serializers.ListField(child=serializers.CharField(), help_text="Event lanes counted.")
    rows = RangeRowSerializer(many=True)


class RangeEventsSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    results = FoundEventSerializer(many=True)
