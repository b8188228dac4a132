"""Rule guards: pairs a semantic cache must not serve for each other, and paraphrases it still may."""

from __future__ import annotations

import pytest

from index.guards.polarity import PolarityStage
from index.guards.registry import build_stages
from index.guards.stages import StepResult
from index.guards.values import ValueStage

# (id, query, cached): a negation or a reversal separates them.
POLARITY_VETOES = [
    ("api-rate-limit", "Is the API rate limited?", "Is the API not rate limited?"),
    ("contraction-isnt", "Is my refund processed?", "Why isn't my refund processed?"),
    ("contraction-cant", "Why can I log in from my phone?", "Why can't I log in from my phone?"),
    ("contraction-wont", "Will the card be charged today?", "The card won't be charged today?"),
    ("cannot", "The invoice can be edited after sending", "The invoice cannot be edited after sending"),
    ("never", "Does the cron job ever run on Sundays?", "Does the cron job never run on Sundays?"),
    ("without-yeast", "How do I bake bread with yeast?", "How do I bake bread without yeast?"),
    ("no-fee", "Is there a fee for wire transfers?", "Is there no fee for wire transfers?"),
    ("enable-disable", "How do I enable two-factor authentication?", "How do I disable two-factor authentication?"),
    ("enabled-disabling", "Logging is enabled in production", "Disabling logging in production"),
    ("allow-block", "Allow pop-ups in Chrome", "Block pop-ups in Chrome"),
    ("allows-blocked", "The firewall allows port 22", "The firewall blocked port 22"),
    ("before-after", "Should I stretch before running?", "Should I stretch after running?"),
    ("raise-lower", "Raise the connection timeout", "Lower the connection timeout"),
    ("increase-decrease", "How to increase the JVM heap size", "How to decrease the JVM heap size"),
    ("include-exclude", "Include archived rows in the report", "Exclude archived rows in the report"),
    ("ascending", "Sort the results in ascending order", "sort the results in descending order"),
    ("above-below", "Alert when CPU is above 90%", "Alert when CPU is below 90%"),
    ("add-remove", "How do I add a user to the sudo group?", "How do I remove a user from the sudo group?"),
    ("accept-reject", "Accept the merge request", "Reject the merge request"),
    ("min-max", "Return the min salary per department", "Return the max salary per department"),
    ("cheapest-most-expensive", "What's the cheapest plan?", "What's the most expensive plan?"),
    ("upload-download", "Upload a file to S3 with boto3", "Download a file from S3 with boto3"),
    ("encrypt-decrypt", "Encrypt a string with AES in Java", "Decrypt a string with AES in Java"),
    ("install-uninstall", "How to install Docker on Ubuntu", "How to uninstall Docker on Ubuntu"),
    ("import-export", "Import contacts from a CSV file", "Export contacts to a CSV file"),
    ("login-logout", "Log in to the admin panel", "Log out of the admin panel"),
    ("buy-sell", "Is now a good time to buy bitcoin?", "Is now a good time to sell bitcoin?"),
    ("deposit-withdraw", "How long does it take to deposit money?", "How long does it take to withdraw money?"),
    ("hot-cold", "Can I store cooked rice in a hot place?", "Can I store cooked rice in a cold place?"),
    ("inbound-outbound", "Block inbound traffic on port 443", "Block outbound traffic on port 443"),
    ("refuse", "Should the bot answer medical questions?", "Should the bot refuse to answer medical questions?"),
    ("prevent-from", "Run the backup job at login", "Prevent the backup job from running at login"),
    ("prefix-un", "Is the mailbox size limited?", "Is the mailbox size unlimited?"),
    ("grant-revoke", "Grant SELECT on orders to analyst", "Revoke SELECT on orders from analyst"),
    ("more-less", "Is Python more verbose than Go?", "Is Python less verbose than Go?"),
    ("always-never", "Do refunds always take five days?", "Do refunds never take five days?"),
    ("case-and-punctuation", "ENABLE DARK MODE!!!", "disable dark mode?"),
]

# (id, query, cached): same meaning, the polarity stage must let it through.
POLARITY_PASSES = [
    ("reordered-not", "Why is the build not passing on main?", "Why is the build on main not passing?"),
    ("not-vs-disallowed", "Is X disallowed?", "Is X not allowed?"),
    ("not-allowed-vs-forbidden", "Is smoking not allowed on the train?", "Is smoking forbidden on the train?"),
    ("unable", "Why am I unable to connect?", "Why am I not able to connect?"),
    ("impossible", "Is it impossible to undo a force push?", "Is it not possible to undo a force push?"),
    ("contraction-expanded", "Why can't I log in?", "Why cannot I log in?"),
    ("dont-do-not", "I don't see the export button", "I do not see the export button"),
    ("both-negated", "Why won't my laptop turn on?", "Why doesn't my laptop turn on?"),
    ("synonym", "How do I close my account?", "How can I shut down my account?"),
    ("reorder", "Sort users by signup date in SQL", "In SQL, sort users by signup date"),
    ("sentence-start-capital", "Refund policy for annual plans", "refund policy for annual plans"),
    ("whether-or-not", "Should I use a VPN?", "Whether or not I should use a VPN?"),
    ("yes-or-no", "Is the API free? Answer yes or no.", "Is the API free?"),
    ("why-or-why-not", "Is remote work productive?", "Is remote work productive? Why or why not?"),
    ("tag-question", "The meeting is at noon, isn't it?", "Is the meeting at noon?"),
    ("interjection-no", "No, I meant the billing address", "I meant the billing address"),
    ("gluten-free", "Gluten-free pancake recipe", "Pancake recipe without gluten"),
    ("more-x-less-anti-x", "How do I get more patient with my kids?", "How do I get less impatient with my kids?"),
    ("paraphrase-few-words", "Which city is the capital of Portugal?", "What's Portugal's capital city?"),
    ("inflection", "Scaling the deployment", "How do I scale deployments?"),
    ("free-of-charge", "Is the starter plan free?", "Is the starter plan free of charge?"),
    ("both-sides-increase", "How to increase disk space", "Ways to increase the disk space"),
    ("not-only", "Not only slow but also flaky tests", "Slow and flaky tests"),
    ("avoid-vs-not", "How can I avoid overdraft fees?", "How do I not get overdraft fees?"),
]

# (id, query, cached): a value slot differs.
VALUE_VETOES = [
    ("number", "Split a bill of $120 between 4 people", "Split a bill of $120 between 5 people"),
    ("number-word", "Give me five ideas for a birthday party", "Give me ten ideas for a birthday party"),
    ("currency", "Convert 100 USD to EUR", "Convert 100 USD to GBP"),
    ("amount", "Is a $5 tip enough?", "Is a $50 tip enough?"),
    ("amount-k-suffix", "Is a salary of $85k good?", "Is a salary of $85 good?"),
    ("percent", "What is 15% of 80?", "What is 20% of 80?"),
    ("unit-distance", "How long to walk 5 km?", "How long to walk 5 miles?"),
    ("temperature", "Bake at 180°C for how long?", "Bake at 180°F for how long?"),
    ("unit-swap", "Convert 5 km to miles", "Convert 5 miles to km"),
    ("conversion-direction", "convert Markdown to HTML", "convert HTML to Markdown"),
    ("version", "What's new in Python 3.11?", "What's new in Python 3.12?"),
    ("version-v", "Migrate the API from v2", "Migrate the API from v3"),
    ("year", "Tax brackets for 2023", "Tax brackets for 2024"),
    ("date", "Flights on 2024-05-01 to Lisbon", "Flights on 2024-05-02 to Lisbon"),
    ("time", "Schedule the job at 5pm", "Schedule the job at 6pm"),
    ("weekday", "Is the office open on Monday?", "Is the office open on Sunday?"),
    ("month", "Weather in Lisbon in March", "Weather in Lisbon in November"),
    ("city", "Best time to visit Paris", "Best time to visit Rome"),
    ("country-lowercase", "do i need a visa for japan", "do i need a visa for india"),
    ("nationality", "Translate this into French", "Translate this into German"),
    ("proglang-lowercase", "reverse a list in python", "reverse a list in javascript"),
    ("proglang-missing", "How do I read a file line by line?", "How do I read a file line by line in Rust?"),
    ("person", "When was Barack Obama born?", "When was Michelle Obama born?"),
    ("product", "How do I reset my iPhone?", "How do I reset my Pixel?"),
    ("plan-tier", "Refund policy for annual plans", "Refund policy for monthly plans"),
    ("plan-name", "Does the Pro plan include SSO?", "Does the Basic plan include SSO?"),
    ("fare-class", "Baggage allowance in economy", "Baggage allowance in business class"),
    ("quoted", "Translate 'good morning' to Spanish", "Translate 'good night' to Spanish"),
    ("backticks", "What does `git stash pop` do?", "What does `git stash drop` do?"),
    ("flag", "What does rm --force do?", "What does rm --recursive do?"),
    ("snake-case", "Explain the max_connections setting", "Explain the shared_buffers setting"),
    ("dotted-name", "What does os.path.join return?", "What does os.path.split return?"),
    ("camel-case", "When does useEffect run?", "When does useMemo run?"),
    ("sql-join", "Difference between INNER JOIN and LEFT JOIN", "Difference between INNER JOIN and RIGHT JOIN"),
    ("division-order", "What is 20 divided by 5?", "What is 5 divided by 20?"),
    ("operator", "Solve 3y + 4 = 19", "Solve 3y - 4 = 19"),
    ("negative-number", "Is -5 degrees Celsius cold?", "Is 5 degrees Celsius cold?"),
    ("roman-numeral", "Who succeeded Louis XIV?", "Who succeeded Louis XV?"),
    ("cooking-quantity", "How many ounces is 2 cups of milk?", "How many ounces is 3 cups of milk?"),
    ("serving-count", "Scale this recipe for 4 servings", "Scale this recipe for 6 servings"),
    ("unknown-tool", "set up jellyfin on truenas", "set up jellyfin on unraid"),
    ("period", "What's the daily withdrawal limit?", "What's the weekly withdrawal limit?"),
    ("ordinal", "Who won the 3rd place?", "Who won the 5th place?"),
]

# (id, query, cached): same values, spelled or ordered differently.
VALUE_PASSES = [
    ("reordered-number", "convert 5 km to miles", "how many miles is 5 kilometers"),
    ("number-word-digit", "Give me 5 ideas for dinner", "Give me five ideas for dinner"),
    ("decimal-zero", "Is 5.0 bigger than 3?", "Is 5 bigger than 3?"),
    ("thousands", "Invest $10,000 for a year", "Invest 10000 dollars for a year"),
    ("scale-word", "A budget of 2 million euros", "A budget of 2,000,000 EUR"),
    ("k-suffix", "A salary of 85k", "A salary of 85,000"),
    ("currency-k-suffix", "A salary of $85k", "A salary of $85,000"),
    ("unit-synonym", "Run 10 km every week", "Run 10 kilometres every week"),
    ("currency-symbol", "Is $5 a good tip?", "Is 5 USD a good tip?"),
    ("percent-word", "What is 15% of 80?", "What is 15 percent of 80?"),
    ("clock", "Wake me up at 5pm", "Wake me up at 17:00"),
    ("midnight", "Run the cron at midnight", "Run the cron at 00:00"),
    ("temperature-spelled", "Bake at 180°C", "Bake at 180 degrees Celsius"),
    ("capitalisation", "What's new in python 3.12?", "what's new in Python 3.12"),
    ("headline-case", "How To Reset My Password On Netflix", "how to reset my password on netflix"),
    ("quoted-name", "What is \"Qdrant\"?", "What is Qdrant?"),
    ("possessive", "Python's GIL explained", "Explain the GIL in Python"),
    ("acronym-expansion", "How many days of PTO do I get?", "How many days of paid time off do I get?"),
    ("country-alias", "Do I need a visa for the United States?", "Do I need a visa for the USA?"),
    ("language-demonym", "How do I say thanks in French?", "How to say thanks in french"),
    ("weekday-case", "Is the gym open on monday?", "Is the gym open on Monday?"),
    ("sentence-start", "Paris hotels near the Louvre", "Hotels in Paris near the Louvre"),
    ("tech-implicit", "Show me the images on this machine", "docker command to show the images on this machine"),
    ("typo", "How do I reset my pasword?", "How do I reset my password?"),
    ("abbreviation", "Where is the config file?", "Where is the configuration file?"),
    ("no-values", "Tips for a better night's sleep", "How can I sleep better at night?"),
    ("one-is-weak", "Which one is faster, Redis or Memcached?", "Which is faster, Redis or Memcached?"),
    ("ordinal-words", "Who won the 3rd place?", "Who won the third place?"),
    ("roman-ordinal", "What did Henry VIII reform?", "What did Henry the Eighth reform?"),
    ("number-and-half", "How long is 2.5 hours in minutes?", "Two and a half hours in minutes"),
    ("dozen", "Bake 24 cookies", "Bake two dozen cookies"),
    ("symmetric-names", "Is Alice married to Bob?", "Is Bob married to Alice?"),
    ("from-to-reordered", "Translate hello from English to French", "Translate hello to French from English"),
    ("currency-code-first", "Send USD 500 to my account", "Send $500 to my account"),
    ("version-word", "Upgrade to version 2", "Upgrade to v2"),
    ("hyphen-number", "Set up two-factor authentication", "Set up two factor authentication"),
    ("unit-plural", "How many calories in 2 cups of rice?", "How many calories in two cups of rice?"),
    ("same-units-reordered", "convert 3 feet to inches", "how many inches are in 3 ft"),
    ("speed", "Is 100 km/h fast for a bike?", "Is 100 kilometers per hour fast for a bike?"),
    ("sql-keywords-case", "select the top 10 rows", "Select the top ten rows"),
    ("plan-implicit", "How do I get a refund?", "How do I get a refund on the Pro plan?"),
]


@pytest.fixture(scope="module")
def polarity() -> PolarityStage:
    return PolarityStage()


@pytest.fixture(scope="module")
def values() -> ValueStage:
    return ValueStage()


def _ids(cases: list[tuple[str, str, str]]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("case", "query", "cached"), POLARITY_VETOES, ids=_ids(POLARITY_VETOES))
def test_negated_or_reversed_prompt_is_vetoed(polarity: PolarityStage, case: str, query: str, cached: str) -> None:
    result = polarity.check(query, cached)
    assert not result.passed, f"{case}: {result.reason}"
    assert not polarity.check(cached, query).passed, "a veto must not depend on which side is cached"


@pytest.mark.parametrize(("case", "query", "cached"), POLARITY_PASSES, ids=_ids(POLARITY_PASSES))
def test_same_polarity_paraphrase_passes(polarity: PolarityStage, case: str, query: str, cached: str) -> None:
    result = polarity.check(query, cached)
    assert result.passed, f"{case}: {result.reason}"


@pytest.mark.parametrize(("case", "query", "cached"), VALUE_VETOES, ids=_ids(VALUE_VETOES))
def test_changed_value_is_vetoed(values: ValueStage, case: str, query: str, cached: str) -> None:
    result = values.check(query, cached)
    assert not result.passed, f"{case}: {result.reason}"
    assert not values.check(cached, query).passed, "a veto must not depend on which side is cached"


@pytest.mark.parametrize(("case", "query", "cached"), VALUE_PASSES, ids=_ids(VALUE_PASSES))
def test_same_values_pass(values: ValueStage, case: str, query: str, cached: str) -> None:
    result = values.check(query, cached)
    assert result.passed, f"{case}: {result.reason}"


@pytest.mark.parametrize(
    ("query", "cached", "expected"),
    [
        ("Is the API rate limited?", "Is the API not rate limited?", "negation: 'not' only in cached"),
        ("Is the API not rate limited?", "Is the API rate limited?", "negation: 'not' only in query"),
        ("Enable SSO", "Disable SSO", "antonym: enable/disable"),
        ("Buy with cash", "Buy without cash", "negation: 'without' only in cached"),
    ],
)
def test_polarity_reason_names_the_difference(
    polarity: PolarityStage, query: str, cached: str, expected: str
) -> None:
    assert polarity.check(query, cached).reason == expected


@pytest.mark.parametrize(
    ("query", "cached", "expected"),
    [
        ("Split $120 between 5 people", "Split $120 between 10 people", "number: 5 vs 10"),
        ("Read a file in Python", "Read a file in Rust", "name: 'Python' vs 'Rust'"),
        ("Annual plan refunds", "Monthly plan refunds", "unit: Annual vs Monthly"),
        ("Walk 5 km", "Walk 5 miles", "number: 5 km vs 5 miles"),
        ("Convert km to miles", "Convert miles to km", "order: 'to miles' vs 'to km'"),
        ("Mount the share on truenas", "Mount the share on openmediavault", "term: 'truenas' vs 'openmediavault'"),
        ("Read a file", "Read a file in Go", "name: 'Go' only in cached"),
    ],
)
def test_value_reason_names_the_difference(values: ValueStage, query: str, cached: str, expected: str) -> None:
    assert values.check(query, cached).reason == expected


def test_passing_results_carry_a_reason_too(polarity: PolarityStage, values: ValueStage) -> None:
    assert polarity.check("Is X disallowed?", "Is X not allowed?").reason.startswith("double flip cancels")
    assert values.check("Walk 5 km", "walk five kilometers").reason == "1 values match"


def test_results_are_deterministic_and_cache_independent() -> None:
    cases = POLARITY_VETOES + POLARITY_PASSES + VALUE_VETOES + VALUE_PASSES
    cached_stages = (PolarityStage(), ValueStage())
    fresh_stages = (PolarityStage(cache_size=0), ValueStage(cache_size=0))
    for _case, query, cached in cases:
        for warm, cold in zip(cached_stages, fresh_stages, strict=True):
            first = warm.check(query, cached)
            assert warm.check(query, cached) == first
            assert cold.check(query, cached) == first


def test_results_name_their_stage(polarity: PolarityStage, values: ValueStage) -> None:
    assert polarity.check("a", "b") == StepResult("polarity", passed=True, reason="same polarity")
    assert values.check("a", "b").stage == "values"
    assert polarity.name == "polarity" and values.name == "values"


@pytest.mark.parametrize(
    ("flags", "names"),
    [((True, True), ["polarity", "values"]), ((True, False), ["polarity"]), ((False, True), ["values"]),
     ((False, False), [])],
)
def test_build_stages_builds_the_enabled_stages(flags: tuple[bool, bool], names: list[str]) -> None:
    wanted = [name for name, on in zip(("polarity", "values"), flags, strict=True) if on]
    assert [stage.name for stage in build_stages(wanted)] == names
