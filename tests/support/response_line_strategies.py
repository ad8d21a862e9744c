"""Response lines of every kind, valid and hostile, as hypothesis draws them.

Shared by the tests that pin the fast readings of response lines (a block read in place, the
agent's counts, the vocab job's counts) to what json.loads and the record checks say.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

digits = st.integers(0, 10**7).map(str)
risky_ids = st.sampled_from(
    ["0", "00", "01", "-1", "-0", "1.5", "1e5", "1E5", "1.0", "true", "null", '"7"', "[1]", "[]",
     "{}", " 1", "1 ", "", "9" * 4299, "9" * 4300, "9" * 4301, "1" + "0" * 4300, "\\u0031", "+1",
     "0x1", "\x00", "Infinity", "NaN", "1_000", "\u0661"]
)  # fmt: skip
separators = st.sampled_from([",", ",", ",", ", ", ",,", " ,", ",\t", ",\r"])
id_lists = st.lists(st.tuples(st.one_of(digits, digits, risky_ids), separators), max_size=12).map(
    lambda items: "".join(element + separator for element, separator in items)[:-1]
)
heads = st.sampled_from(
    ['{"id":"p1","output_ids":[', '{"id": "p1", "output_ids": [', '{"id":7,"output_ids":[',
     '{"id":"a\\"b","output_ids":[', '{"id":"\\u00e9","output_ids":[', '{"id":"é","output_ids":[',
     '{"id":01,"output_ids":[', '{"id":-0,"output_ids":[', '{"id":"p1" ,"output_ids":[',
     '{"output_ids":[', '{"id":"p1","output_ids":[0],"output_ids":[', '{"id":"x\x01","output_ids":[']
)  # fmt: skip
tails = st.sampled_from(
    ["]}", "],\"completion_tokens\":3}", "],\"completion_tokens\":-1}", "],\"completion_tokens\":null}",
     "],\"completion_tokens\":true}", "],\"completion_tokens\":2.0}", "],\"output_ids\":[5]}",
     "],\"id\":\"other\"}", "],\"id\":\"p1\",\"id\":\"p2\"}", "],\"x\":[1,,2]}", "],\"x\":\",0\"}",
     "],\"x\":\",01,,\"}", "]} ", "]}\r", "]}x", "]", "],}", "],\"a\":1,}", "],\"meta_info\":{\"id\":\"q\"}}",
     "],\"x\":" + "[" * 3000 + "]" * 3000 + "}", "]}{\"id\":\"p2\",\"output_ids\":[1]}"]
)  # fmt: skip
hostile_lines = st.builds(lambda h, i, t: (h + i + t).encode(), heads, id_lists, tails)
records = st.fixed_dictionaries(
    {"id": st.one_of(st.text(max_size=6), st.integers(-(10**19), 10**19))},
    optional={
        "output_ids": st.one_of(
            st.lists(st.integers(0, 2**40), max_size=20),
            st.lists(st.one_of(st.integers(-2, 9), st.floats(0, 2), st.text(max_size=2)), max_size=4),
        ),
        "completion_tokens": st.one_of(st.none(), st.integers(-2, 2**24), st.booleans()),
        "meta_info": st.fixed_dictionaries({"id": st.text(max_size=3)}),
    },
)  # fmt: skip
dumped = st.builds(
    lambda record, compact: json.dumps(record, separators=(",", ":") if compact else None).encode(),
    records,
    st.booleans(),
)


@st.composite
def torn(draw: st.DrawFn, lines: st.SearchStrategy[bytes]) -> bytes:
    """A line cut anywhere (a write that stopped), or glued to a whole one."""
    line = draw(lines)
    cut = line[: draw(st.integers(0, len(line)))]
    return cut + draw(st.sampled_from([b"", draw(lines)]))


any_line = st.one_of(
    dumped, hostile_lines, torn(dumped), st.sampled_from([b"", b"   ", b"\x00" * 3])
)
