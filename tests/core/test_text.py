"""Names are cleaned into text Postgres stores (profiler_app.core.text)."""

import hashlib
import json

import pandas as pd

from profiler_app.core.text import clean_column, clean_json, clean_text, storable_json


def test_it_replaces_nul_and_lone_surrogates():
    assert clean_text("a\x00b\ud800c") == "a\ufffdb?c"


def test_it_cuts_a_name_to_its_column_with_a_marker():
    name = "ProfilerStep#1" + "s" * 300
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    marker = f"… [314 characters, cut; #{digest}]"
    assert clean_text(name, 255) == name[: 255 - len(marker)] + marker
    assert len(clean_text(name, 255)) == 255
    assert clean_text("x" * 40, 32) == "x" * 32  # no room for a marker: a plain cut


def test_it_keeps_a_name_under_an_index_entrys_bytes():
    name = "é" * 1500  # 3,000 bytes of UTF-8
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    marker = f"… [1500 characters, cut; #{digest}]"
    kept = (2000 - len(marker.encode())) // 2
    assert clean_text(name) == "é" * kept + marker
    assert len(clean_text(name).encode()) <= 2000


def test_it_rebuilds_a_column_only_when_a_name_needs_it():
    clean = pd.Series(["a", "b", None], dtype=object)
    assert clean_column(clean) is clean
    fixed = clean_column(pd.Series(["a", "b\x00", None, "b\x00"], dtype=object))
    assert fixed.tolist() == ["a", "b\ufffd", None, "b\ufffd"]


def test_it_cleans_json_strings_and_keys_without_cutting_them():
    long = "z" * 3000
    assert clean_json({"k\x00": ["v\ud800", 7, {"long": long}]}) == {
        "k\ufffd": ["v?", 7, {"long": long}]
    }


def test_json_text_is_cleaned_only_where_a_string_needs_it():
    plain = {"kernel": ["sm90_xmma", 7, 1.5, None, {"é": "\U0001f600"}], "3": "a\\u0000b"}
    assert json.loads(storable_json(plain)) == plain  # a string that spells NUL stays
    for value in ({"k\x00": ["v", 1]}, ["ok", {"lone": "x\ud800"}], "a\x00b\udfffc"):
        text = storable_json(value)
        assert json.loads(text) == clean_json(value)
        text.encode("utf-8")  # what Postgres stores: no lone surrogate left
        assert "\\u0000" not in text
