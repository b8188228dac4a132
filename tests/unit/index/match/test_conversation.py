"""The context rule of conversations: values, option order and content of two relevant contexts."""

from __future__ import annotations

import pytest

from index.guards.stages import StepResult
from index.match.conversation import ACTION, CONTENT, OPTION_ORDER, VALUE, ContextRule, default_rule
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Decision, Kind, Reason
from index.match.policy import MatchPolicy
from index.request.context import dependency_context

ORDER = ("My order 1042 was due on Monday and it still isn't here.\n"
         "I found order 1042: it left with DHL and tracking shows a delay.")
OPTIONS = ("I want a new phone plan with 20 GB of data.\n"
           "These plans have 20 GB or more:\n1. Wave Lite\n2. Wave Plus\n3. Wave Max")


@pytest.fixture(scope="module")
def rule() -> ContextRule:
    return default_rule()


NIGHTS = "I booked three nights in Lisbon from June 4.\nThree nights in Lisbon are confirmed."
JACKET = "Do you have the blue rain jacket in size L?\nThe blue rain jacket in size L ships in two days."


@pytest.mark.parametrize(("cached", "query", "stage", "reason"), [
    pytest.param(ORDER, ORDER.replace("1042", "1024"), VALUE, "1024 vs 1042", id="digits-swapped"),
    pytest.param(NIGHTS, NIGHTS.replace("hree", "wo"), VALUE, "two vs three", id="nights"),
    pytest.param(ORDER, ORDER.replace("DHL", "UPS"), VALUE, "UPS vs DHL", id="carrier"),
    pytest.param(OPTIONS, OPTIONS.replace("1. Wave Lite\n2. Wave Plus", "1. Wave Plus\n2. Wave Lite"), OPTION_ORDER,
                 "wave plus, wave lite, wave max vs wave lite, wave plus, wave max", id="options-reordered"),
    pytest.param(JACKET, JACKET.replace("blue", "red"), CONTENT, "'red' vs 'blue'", id="colour-swapped"),
])
def test_a_context_that_differs_in_one_detail_is_named(rule: ContextRule, cached: str, query: str, stage: str,
                                                       reason: str) -> None:
    found = rule.difference(query, cached)
    assert found is not None
    assert (found.stage, found.reason) == (stage, reason)


def test_an_inline_list_in_another_order_is_an_option_difference(rule: ContextRule) -> None:
    a = "I'm deploying to Frankfurt.\nPick a runtime: Node 20, Python 3.12 or Go 1.22."
    b = "I'm deploying to Frankfurt.\nPick a runtime: Go 1.22, Node 20 or Python 3.12."
    found = rule.difference(a, b)
    assert found is not None and found.stage == OPTION_ORDER


@pytest.mark.parametrize("other", [
    pytest.param(ORDER.upper().replace("ORDER", "order"), id="case"),
    pytest.param(ORDER.replace("isn't", "is not").replace(".", "!"), id="contraction-punctuation"),
    pytest.param("Hi there! Sorry to bother you. " + ORDER.replace("\n", "\nThanks for your patience. "),
                 id="chatter"),
])
def test_a_difference_of_form_is_no_difference(rule: ContextRule, other: str) -> None:
    assert rule.difference(ORDER, other) is None


def test_a_thread_told_in_other_words_with_the_same_values_and_actions_is_the_same_situation(
        rule: ContextRule) -> None:
    """Two threads too reworded to align word by word are compared on what the answer depends on: the values (order
    1042, Monday, DHL), options, roles and actions; the rest is how each was told."""
    reworded = ("Order number 1042 should have come on Monday, but nothing has turned up.\n"
                "Order 1042 was handed to DHL; their tracking says it is running late.")
    assert rule.difference(ORDER, reworded) is None
    # ... and a changed value in the same rewording still differs.
    found = rule.difference(ORDER, reworded.replace("DHL", "UPS"))
    assert found is not None and found.stage == VALUE


@pytest.mark.parametrize(("cached", "query"), [
    pytest.param("I pay $45 a month for the Off-Peak membership and I'm travelling for work.\n"
                 "You're on Off-Peak at $45 a month. While you travel I can freeze the membership.",
                 "My Off-Peak membership costs me $45 monthly, but I'll be away on a work trip.\n"
                 "I see the Off-Peak plan, $45 per month. I can cancel it while you're away.", id="offered"),
    pytest.param("I can't log in to my account maria.k.\nThe account maria.k was locked.\n"
                 "I want to delete the account.\nI can help you with that.",
                 "Logging in to account maria.k doesn't work.\nThe account maria.k got locked after failed sign-ins."
                 "\nPlease help me reset my password.\nSure, that works.", id="asked-for"),
])
def test_a_thread_told_in_other_words_that_acts_otherwise_is_an_action_difference(
        rule: ContextRule, cached: str, query: str) -> None:
    found = rule.difference(query, cached)
    assert found is not None and found.stage == ACTION


def test_an_option_is_its_first_sentence(rule: ContextRule) -> None:
    a = "Your options are:\n1. a fixed-term deposit\n2. an easy-access saver\n3. a cash ISA."
    b = "Your options are:\n1. an easy-access saver\n2. a fixed-term deposit\n3. a cash ISA. Hope this helps."
    found = rule.difference(a, b)
    assert found is not None and found.stage == OPTION_ORDER


def test_two_said_as_a_word_or_a_digit_is_one_value(rule: ContextRule) -> None:
    assert rule.difference("I booked two nights in Lisbon.\nTwo nights, confirmed.",
                           "I booked 2 nights in Lisbon.\n2 nights, confirmed.") is None


def test_a_negation_is_content(rule: ContextRule) -> None:
    found = rule.difference("I want to keep the subscription.\nOkay, it stays active.",
                            "I do not want to keep the subscription.\nOkay, it stays active.")
    assert found is not None and found.stage == CONTENT


def test_small_talk_drops_out_by_what_it_carries(rule: ContextRule) -> None:
    """A sentence with no value, no negation and no word anything else takes up is small talk, whatever its words."""
    plain = "My order 1042 is late.\nOrder 1042 is delayed."
    for talk in ("Big fan of the app, it got me through my exams. ", "Hope the sun is shining where you are. "):
        assert rule.difference(talk + plain, plain) is None


@pytest.mark.parametrize("extra", ["Not the blue one. ", "My daughter Emma says hi. ", "It was due 3 days ago. ",
                                   "The order is late again. "],
                         ids=["negation", "name", "number", "taken-up"])
def test_a_sentence_that_carries_something_is_not_small_talk(rule: ContextRule, extra: str) -> None:
    plain = "My order 1042 is late.\nOrder 1042 is delayed."
    assert rule.difference(extra + plain, plain) is not None


def test_a_word_wordnet_calls_the_same_is_a_rewording_and_an_unrelated_one_is_not(rule: ContextRule) -> None:
    a = "I want to cancel my StreamMax subscription.\nYour StreamMax subscription can be cancelled today."
    assert rule.difference(a.replace("cancel my", "delete my"), a) is None
    found = rule.difference(a.replace("cancel my", "pause my"), a)
    assert found is not None and found.stage == CONTENT


def test_values_that_change_places_across_a_direction_differ(rule: ContextRule) -> None:
    found = rule.difference("I want to convert 100 USD to EUR.\nSure, 100 USD to EUR.",
                            "I want to convert 100 EUR to USD.\nSure, 100 EUR to USD.")
    assert found is not None


def test_the_question_takes_up_what_would_be_small_talk(rule: ContextRule) -> None:
    plain = "My order 1042 is late.\nOrder 1042 is delayed."
    with_gift = "Birthdays are always hectic. " + plain
    assert rule.difference(with_gift, plain) is None
    assert rule.difference(with_gift, plain, asked=("Can you gift-wrap a birthday present?",)) is not None


def test_an_early_exchange_holding_a_number_stays_in_the_dependency_context() -> None:
    earlier = [{"role": "user", "content": "I have a question about order 1042."},
               {"role": "assistant", "content": "Sure, what happened?"},
               {"role": "user", "content": "The parcel never arrived."},
               {"role": "assistant", "content": "Tracking shows it stuck in transit."}]
    assert "1042" in (dependency_context(earlier, "Can you chase it?") or "")


POLICY = MatchPolicy(0.5, stages=())  # the default decision: guarded


def _decide(query_context: str, cached_context: str) -> Decision:
    candidate = Candidate(1, "Can you chase it?", 1.0, cached_context, 0.95)
    return decide("Can you chase it?", [candidate], POLICY, Deciders(), query_context)


def test_decide_vetoes_a_conversation_whose_context_differs_in_a_value() -> None:
    decision = _decide(ORDER.replace("1042", "1024"), ORDER)
    assert decision.reason is Reason.VETOED and decision.vetoed_by == VALUE
    assert decision.stages[-1] == StepResult(VALUE, False, "1024 vs 1042")


def test_decide_serves_a_conversation_whose_context_differs_in_form() -> None:
    assert _decide("Hi! " + ORDER, ORDER).hit


def test_a_conversation_is_held_to_the_conversation_threshold_as_the_policy_states_it() -> None:
    request = POLICY.for_request(conversation=True)
    assert request.min_similarity == POLICY.conversation_threshold == POLICY.threshold_for(Kind.CONVERSATION)
    assert request.min_context_similarity == POLICY.min_context_similarity  # set, never shifted
    assert request.for_request(conversation=True) == request


@pytest.mark.parametrize("left, right", [
    ("It costs $45 a month.", "It costs 45 dollars a month."),
    ("I arrive on June 4.", "I arrive on 4 June."),
    ("My flight is on Jan 5.", "My flight is on January 5th."),
    ("The fee is 20%.", "The fee is 20 percent."),
], ids=["currency-word", "day-month-order", "ordinal-day", "percent-word"])
def test_a_value_written_another_way_is_the_same_context(rule: ContextRule, left: str, right: str) -> None:
    assert rule.difference(left, right) is None


@pytest.mark.parametrize("left, right", [
    ("It costs $45 a month.", "It costs $54 a month."),
    ("I arrive on June 4.", "I arrive on 14 June."),
    ("My flight is on Jan 5.", "My flight is on January 6th."),
], ids=["amount", "day", "ordinal-day"])
def test_another_value_written_another_way_still_differs(rule: ContextRule, left: str, right: str) -> None:
    found = rule.difference(left, right)
    assert found is not None and found.stage == VALUE


def test_an_answer_to_the_assistants_question_is_never_small_talk(rule: ContextRule) -> None:
    asked = "I want to see a movie.\nWhat genre?\n{}\nI found Dogman, Hackers and High Life."
    found = rule.difference(asked.format("Drama."), asked.format("Biographical."))
    assert found is not None and found.stage == CONTENT


def test_a_word_said_elsewhere_does_not_hide_that_it_was_replaced(rule: ContextRule) -> None:
    said = "Play it on the speaker in the kitchen.\nOK, playing it on the {}."
    found = rule.difference(said.format("TV"), said.format("kitchen speaker"))
    assert found is not None
