"""The allowlist model: the shapes of SPEC §3 parse, and every mistake is named exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from crcr.relay.allowlist.model import (
    Allowlist,
    AllowlistError,
    Level,
    Problem,
    TokenConstraints,
    check_run_label,
    parse_allowlist,
    validate_allowlist,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "allowlists"

SPEC_EXAMPLE = """
L1:
  - org1/repo1                 # dispatch only
L2:
  - org2/repo2                 # + results on the HUD
L3:
  xpu:                         # device: the PR label ciflow/crcr/xpu opts a PR in
    org3/xpu-backend: [oncall1, oncall2]
L4:
  - org4/critical: oncall1, oncall2   # + a check run on every PR
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(AllowlistError) as caught:
        parse_allowlist(text)
    return [str(problem) for problem in caught.value.problems]


def test_the_spec_example_gives_each_repo_its_level() -> None:
    allowlist = parse_allowlist(SPEC_EXAMPLE)

    assert allowlist.level_of("org1/repo1") == Level.L1
    assert allowlist.level_of("org2/repo2") == Level.L2
    assert allowlist.level_of("org3/xpu-backend") == Level.L3
    assert allowlist.level_of("org4/critical") == Level.L4
    assert allowlist.level_of("org5/unknown") is None
    assert allowlist.oncalls("org3/xpu-backend") == ("oncall1", "oncall2")
    assert allowlist.oncalls("org4/critical") == ("oncall1", "oncall2")
    assert allowlist.oncalls("org1/repo1") == ()


def test_levels_are_ordered_and_print_as_their_names() -> None:
    assert Level.L1 < Level.L2 < Level.L3 < Level.L4
    assert [str(level) for level in Level] == ["L1", "L2", "L3", "L4"]
    assert f"{Level.L3}" == "L3"


def test_lookups_ignore_case_and_keep_the_canonical_spelling() -> None:
    allowlist = parse_allowlist("L2:\n  - PyTorch-Labs/Ecosystem.CI\n")

    assert allowlist.level_of("pytorch-labs/ecosystem.ci") == Level.L2
    entry = allowlist.entry("PYTORCH-LABS/ECOSYSTEM.CI")
    assert entry is not None
    assert entry.repo == "PyTorch-Labs/Ecosystem.CI"
    assert allowlist.dispatch_targets() == ("PyTorch-Labs/Ecosystem.CI",)


def test_l4_items_take_oncalls_as_a_string_or_a_list() -> None:
    allowlist = parse_allowlist(
        "L4:\n  - org/plain\n  - org/csv: 'a, b ,c'\n  - org/listed: [d, '@e']\n"
    )

    assert allowlist.oncalls("org/plain") == ()
    assert allowlist.oncalls("org/csv") == ("a", "b", "c")
    assert allowlist.oncalls("org/listed") == ("d", "e")


def test_l1_and_l2_items_may_carry_oncalls_like_the_reference_file() -> None:
    allowlist = parse_allowlist("L1:\n  - org/one: alice\nL2:\n  - org/two: [bob]\n")

    assert allowlist.oncalls("org/one") == ("alice",)
    assert allowlist.oncalls("org/two") == ("bob",)


def test_entries_may_restrict_their_events_as_the_reference_allows() -> None:
    allowlist = parse_allowlist(
        "L2:\n  - org/nightly-only: {oncalls: [carol], events: [nightly]}\n  - org/both\n"
    )

    assert allowlist.events_of("org/nightly-only") == {"nightly"}
    assert allowlist.oncalls("org/nightly-only") == ("carol",)
    assert allowlist.events_of("org/both") == {"pull_request", "nightly"}


def test_entries_may_pin_the_repository_id_workflow_and_ref() -> None:
    allowlist = parse_allowlist(
        "L4:\n  - org/critical: {oncalls: [al], repository_id: 1296269,"
        " workflow: 'org/critical/.github/workflows/crcr.yml@*', ref: refs/heads/main}\n"
    )

    entry = allowlist.entry("org/critical")
    assert entry is not None
    assert entry.constraints == TokenConstraints(
        "1296269", "org/critical/.github/workflows/crcr.yml@*", "refs/heads/main"
    )
    assert entry.oncalls == ("al",)


def test_l3_devices_map_to_their_repos_and_labels() -> None:
    allowlist = parse_allowlist((FIXTURES / "valid.yaml").read_text())

    assert allowlist.devices() == ("xpu", "npu")
    assert allowlist.device_of("intel/torch-xpu-ops") == "xpu"
    # An L4 entry without a device has its repository's name (SPEC §10.2).
    assert allowlist.level_of("pytorch/crcr-test") == Level.L4
    assert allowlist.device_of("pytorch/crcr-test") == "crcr-test"
    assert allowlist.device_of("pytorch-labs/ecosystem-smoke") is None
    assert allowlist.repos_for_device("npu") == ("Ascend/pytorch", "ascend-ci/npu-nightly")
    assert allowlist.repos_for_device("NPU") == ("Ascend/pytorch", "ascend-ci/npu-nightly")
    assert allowlist.repos_for_device("tpu") == ()
    assert check_run_label("xpu") == "ciflow/crcr/xpu"


def test_check_runs_go_to_l4_always_and_to_l3_only_with_the_device_label() -> None:
    allowlist = parse_allowlist(SPEC_EXAMPLE)

    assert allowlist.needs_check_run("org4/critical", [])
    assert not allowlist.needs_check_run("org3/xpu-backend", ["ciflow/trunk"])
    assert allowlist.needs_check_run("org3/xpu-backend", ["ciflow/crcr/xpu"])
    assert not allowlist.needs_check_run("org2/repo2", ["ciflow/crcr/xpu"])
    assert not allowlist.needs_check_run("org9/unknown", ["ciflow/crcr/xpu"])


def test_dispatch_targets_cover_every_level_highest_first_in_file_order() -> None:
    allowlist = parse_allowlist((FIXTURES / "valid.yaml").read_text())

    assert allowlist.dispatch_targets() == (
        "pytorch/crcr-test",
        "rocm/pytorch-rocm-ci",
        "intel/torch-xpu-ops",
        "Ascend/pytorch",
        "ascend-ci/npu-nightly",
        "openreg/pytorch-openreg",
        "vllm-project/vllm",
        "huggingface/accelerate-ci",
        "pytorch-labs/ecosystem-smoke",
        "Example-Org/Tutorials.Bot",
    )
    assert (
        allowlist.dispatch_targets()
        == parse_allowlist((FIXTURES / "valid.yaml").read_bytes()).dispatch_targets()
    )


def test_repos_at_least_a_level_include_the_higher_levels() -> None:
    allowlist = parse_allowlist(SPEC_EXAMPLE)

    assert allowlist.repos_at_least(Level.L2) == ("org4/critical", "org3/xpu-backend", "org2/repo2")
    assert allowlist.repos_at_least(Level.L4) == ("org4/critical",)
    assert allowlist.repos_at(Level.L1) == ("org1/repo1",)


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "L1:\nL2: []\nL3: {}\nL4:\n"])
def test_an_empty_file_or_empty_levels_is_an_empty_allowlist(text: str) -> None:
    allowlist = parse_allowlist(text)

    assert allowlist == Allowlist()
    assert len(allowlist) == 0
    assert allowlist.dispatch_targets() == ()


def test_the_realistic_example_is_valid() -> None:
    allowlist = parse_allowlist((FIXTURES / "valid.yaml").read_bytes())

    assert len(allowlist) == 10
    assert allowlist.oncalls("vllm-project/vllm") == ("vllm-oncall", "simon-mo")
    assert allowlist.level_of("ascend/PYTORCH") == Level.L3


# One fixture per kind of mistake, with every problem it must report, in order.
BAD_FILES = {
    "bad-unknown-key.yaml": [
        "l2: unknown top-level key (expected L1, L2, L3, L4)",
        "L5: unknown top-level key (expected L1, L2, L3, L4)",
    ],
    "bad-level-shape.yaml": [
        "L1: must be a list of repositories, got a mapping",
        "L2: must be a list of repositories, got a string",
        "L3: must be a mapping of device → repositories, got a list",
        "L4: must be a list of repositories, got a mapping",
    ],
    "bad-repo-form.yaml": [
        "L1[0]: 'just-a-name' is not of the form owner/repo",
        "L1[1]: 'org/repo/extra' is not of the form owner/repo",
        "L1[2]: '-org/repo': owner '-org' is not a valid GitHub login",
        "L3.xpu['org3/has space']: 'org3/has space': repository name 'has space' may only"
        " contain letters, digits, '.', '-' and '_' (at most 100)",
        "L4[0]: 'https://github.com/org4/critical' is not of the form owner/repo",
    ],
    "bad-duplicate-repo.yaml": [
        "L3.xpu.Org1/Repo1: 'Org1/Repo1' is listed twice: also at L1[0]",
        "L4[1]: 'org4/critical' is listed twice: also at L4[0]",
    ],
    "bad-oncall.yaml": [
        "L2[0]: oncall 'not a login' is not a valid GitHub login",
        "L3.xpu.org3/xpu-backend: oncall must be a GitHub login, got a number",
        "L4[0]: oncalls must be a list of GitHub logins or a comma-separated string, got a number",
        "L4[1]: oncall '-leading-hyphen' is not a valid GitHub login",
    ],
    "bad-device.yaml": [
        "L3.XPU: device name must match [a-z0-9][a-z0-9_.-]* (it becomes the label"
        " ciflow/crcr/XPU)",
        "L3['']: device name must not be empty",
        "L3.npu/v2: device name must match [a-z0-9][a-z0-9_.-]* (it becomes the label"
        " ciflow/crcr/npu/v2)",
        "L3.a-device-name-that-is-far-too-long-for-a-label: device name is longer than 38"
        " characters (GitHub caps labels at 50)",
        "L3.gpu: must be a mapping of owner/repo → oncalls, got a list",
    ],
    "bad-item-type.yaml": [
        "L1[0]: must be an owner/repo string or a one-key mapping owner/repo: oncalls,"
        " got a number",
        "L1[1]: must be an owner/repo string or a one-key mapping owner/repo: oncalls, got a list",
        "L1[2]: a mapping entry must have exactly one key, owner/repo (has 2)",
        "L1[3]: must be an owner/repo string or a one-key mapping owner/repo: oncalls,"
        " got nothing (null)",
        "L3.xpu.123: repository must be an owner/repo string, got a number",
    ],
    "bad-yaml-syntax.yaml": [
        "allowlist: YAML syntax error at line 4, column 3: expected ',' or ']', but got ':'"
        " (while parsing a flow sequence at line 3)",
    ],
    "bad-duplicate-key.yaml": [
        "allowlist: duplicate key 'org3/xpu-backend' at line 6 (YAML keeps only the last one)",
        "allowlist: duplicate key 'L2' at line 7 (YAML keeps only the last one)",
    ],
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_each_kind_of_mistake_is_reported_with_level_and_entry(name: str) -> None:
    assert problems_of((FIXTURES / name).read_text()) == BAD_FILES[name]


def test_every_bad_fixture_is_covered() -> None:
    on_disk = {path.name for path in FIXTURES.glob("bad-*.yaml")}
    assert on_disk == set(BAD_FILES)


def test_the_error_carries_structured_problems_and_reads_as_a_list() -> None:
    with pytest.raises(AllowlistError) as caught:
        parse_allowlist("L1:\n  - nope\nL4:\n  - org/x: 5\n")

    assert caught.value.problems == (
        Problem("L1", (0,), "'nope' is not of the form owner/repo"),
        Problem(
            "L4",
            (0,),
            "oncalls must be a list of GitHub logins or a comma-separated string, got a number",
        ),
    )
    assert str(caught.value).splitlines() == [
        "invalid allowlist (2 problems):",
        "  L1[0]: 'nope' is not of the form owner/repo",
        "  L4[0]: oncalls must be a list of GitHub logins or a comma-separated string,"
        " got a number",
    ]


def test_a_repo_may_appear_only_once_across_levels_whatever_its_case() -> None:
    assert problems_of("L1: [org/repo]\nL2: [ORG/REPO]\n") == [
        "L2[0]: 'ORG/REPO' is listed twice: also at L1[0]"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- org/repo\n", "allowlist: must be a mapping of levels L1-L4, got a list"),
        (
            "L2:\n  - org/r: {owner: team}\n",
            "L2[0]: unknown field(s) owner "
            "(an entry may have oncalls, events, repository_id, workflow, ref, device,"
            " max_concurrent, paths, paths_ignore)",
        ),
        (
            "L2:\n  - org/r: {events: [push]}\n",
            "L2[0]: unsupported event(s) 'push' (expected nightly, pull_request)",
        ),
        ("L2:\n  - org/r: {events: []}\n", "L2[0]: events must be a non-empty list, got a list"),
        (
            "L2:\n  - org/r: {repository_id: abc}\n",
            "L2[0]: repository_id must be a positive integer (GitHub's id)",
        ),
        ("L2:\n  - org/r: {workflow: ''}\n", "L2[0]: workflow must be a non-empty pattern string"),
        ("L3:\n  7: {org/r: []}\n", "L3.7: device name must be a string, got a number"),
        (
            "L1: [org/r]\n---\nL2: [org/s]\n",
            "allowlist: YAML syntax error at line 2, column 1: but found another document"
            " (expected a single document in the stream at line 1)",
        ),
        (
            "buildkite_repos: {vllm/ci: not-a-repo}\n",
            "buildkite_repos.vllm/ci: 'not-a-repo' is not of the form owner/repo",
        ),
    ],
)
def test_other_mistakes_are_named(text: str, expected: str) -> None:
    assert problems_of(text) == [expected]


def test_non_utf8_bytes_are_rejected() -> None:
    with pytest.raises(AllowlistError, match="not UTF-8 text"):
        parse_allowlist(b"L1:\n  - org/\xff\n")


def test_the_references_buildkite_section_is_accepted_and_kept_aside() -> None:
    allowlist = parse_allowlist(
        "L2: [vllm-project/vllm]\nbuildkite_repos:\n  vllm/ci: vllm-project/vllm\n"
    )

    assert allowlist.buildkite_repos == {"vllm/ci": "vllm-project/vllm"}
    assert allowlist.level_of("vllm-project/vllm") == Level.L2


def test_an_already_loaded_document_validates_the_same_way() -> None:
    allowlist = validate_allowlist({"L4": [{"org/x": ["a"]}]})
    assert allowlist.oncalls("org/x") == ("a",)
    with pytest.raises(AllowlistError):
        validate_allowlist({"L4": "org/x"})


def test_anchors_and_merge_keys_are_plain_yaml_and_allowed() -> None:
    allowlist = parse_allowlist(
        "L3:\n  xpu:\n    org/a: &team [ann, ben]\n  npu:\n    org/b: *team\n"
    )
    assert allowlist.oncalls("org/b") == ("ann", "ben")


# --- the L4 device (SPEC §10.2) -------------------------------------------------------


def test_an_l4_entry_names_its_device_or_takes_its_repositorys_name() -> None:
    allowlist = parse_allowlist(
        "L4:\n"
        "  - org4/critical: oncall1\n"
        "  - org4/Big.Backend\n"
        "  - org4/named: {oncalls: [a], device: npu}\n"
    )
    assert allowlist.device_of("org4/critical") == "critical"
    assert allowlist.device_of("org4/big.backend") == "big.backend"
    assert allowlist.device_of("org4/named") == "npu"
    assert allowlist.repos_for_device("npu") == ("org4/named",)
    assert allowlist.devices() == ()  # the L3 devices only
    assert allowlist.needs_check_run("org4/named", [])


def test_an_l3_entry_may_repeat_its_device_but_not_contradict_it() -> None:
    same = parse_allowlist("L3:\n  npu:\n    org/a: {oncalls: [x], device: npu}\n")
    assert same.device_of("org/a") == "npu"
    assert problems_of("L3:\n  npu:\n    org/a: {device: xpu}\n") == [
        "L3.npu.org/a: device 'xpu' differs from the L3 key 'npu' it is under"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "L4:\n  - org/_hidden\n",
            "L4[0]: without a device, its repository name '_hidden' would be one, but device"
            " name must match [a-z0-9][a-z0-9_.-]* (it becomes the label ciflow/crcr/_hidden);"
            " name one: `org/_hidden: {device: NAME}`",
        ),
        ("L4:\n  - org/a: {device: NPU}\n", "L4[0]: device name must match [a-z0-9][a-z0-9_.-]*"
         " (it becomes the label ciflow/crcr/NPU)"),
        ("L2:\n  - org/a: {device: npu}\n",
         "L2[0]: device is for L3 and L4 entries (it names their label)"),
    ],
)  # fmt: skip
def test_an_unusable_device_is_named(text: str, expected: str) -> None:
    assert problems_of(text) == [expected]
