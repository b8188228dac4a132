"""What a conversation's last message can depend on: the whole thread from its first related exchange on, user and
assistant turns alike (small talk is the context rule's to judge, by what it carries); a leading exchange that only
asks something unrelated drops out, and a question that stands alone after unrelated history is a single turn."""

from __future__ import annotations

from typing import Any

import pytest

from index.request.context import MAX_TURNS, actions, asks_for_information, dependency_context, stands_alone


def turns(*texts: str) -> list[dict[str, Any]]:
    """User and assistant turns, alternating, starting with the user."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


REQUEST = ("The teapot from order PT-4821 arrived with a crack down the side.",
           "I'm sorry about that. For order PT-4821 I can send a new teapot or refund it.",
           "I'd rather you refund it.", "No problem, I'll refund it today.")
FOLLOW_UP = "How long will that take?"
BARE = dependency_context(turns(*REQUEST), FOLLOW_UP)


def test_every_turn_of_the_thread_is_what_a_follow_up_depends_on() -> None:
    assert BARE is not None and BARE.split("\n") == list(REQUEST)


def test_an_unrelated_question_asked_first_leaves_the_context() -> None:
    history = turns("Where can I find your privacy policy?", "It is linked in the footer of the site.", *REQUEST)
    assert dependency_context(history, FOLLOW_UP) == BARE


@pytest.mark.parametrize(("opening", "reply"), [
    ("My card ending 4242 was charged twice.", "I can see both charges."),
    ("I live in Leeds.", "Thanks, noted."),
    ("Is order 1042 on its way?", "Yes, it ships tomorrow."),
], ids=["a-value", "a-statement", "a-question-with-a-value"])
def test_a_leading_exchange_that_gives_a_detail_stays(opening: str, reply: str) -> None:
    context = dependency_context(turns(opening, reply, *REQUEST), FOLLOW_UP)
    assert context is not None and context.startswith(opening)


def test_a_leading_question_that_shares_a_word_with_the_thread_stays() -> None:
    context = dependency_context(turns("Can I change the teapot colour?", "Only before it ships.", *REQUEST), FOLLOW_UP)
    assert context is not None and "colour" in context


def test_the_detail_an_assistant_offered_is_part_of_the_context() -> None:
    one = dependency_context(turns("I need a bus.", "How about the 8 am bus?", "Sounds good."), "Book it.")
    other = dependency_context(turns("I need a bus.", "How about the 9 am bus?", "Sounds good."), "Book it.")
    assert one != other


def test_a_question_that_stands_alone_after_unrelated_history_has_no_context() -> None:
    history = turns("Where can I find your privacy policy?", "It is linked in the footer of the site.")
    assert dependency_context(history, "How do I reset my router password?") is None


def test_a_follow_up_that_points_back_keeps_even_an_unrelated_last_exchange() -> None:
    history = turns("Where can I find your privacy policy?", "It is linked in the footer of the site.")
    assert dependency_context(history, "Can you send it to me?") is not None


@pytest.mark.parametrize("message", ["Book the cheaper one.", "And the price?", "yes", "What about Tuesday?",
                                     "Can you insure it?", "Send their phone number.", "What is the address?",
                                     "When does the museum open?", "How long will that take?",
                                     "Can you explain that error?", "Is it open on Sundays?",
                                     "Which one is the cheapest?",
                                     "Is there another way?", "Is there a fee?",
                                     "Is there a way to change that address?", "Is there a way to undo that?",
                                     "What does the error mean?"],
                         ids=["comparative", "ellipsis", "bare-yes", "what-about", "pronoun", "possessive",
                              "bare-definite", "definite-subject", "demonstrative-subject", "demonstrative-noun",
                              "pronoun-with-be", "one-superlative", "another", "one-noun-no-name",
                              "demonstrative-after-a-verb", "demonstrative-at-the-end", "definite-unquoted"])
def test_a_message_that_points_back_does_not_stand_alone(message: str) -> None:
    assert not stands_alone(message)


@pytest.mark.parametrize("message", ["How do I reset my router password?", "Is it safe to eat raw eggs?",
                                     "Is there a way to export my notes as PDF?", "What is the capital of France?",
                                     "My laptop is slow, how do I fix it?", "Who was the first president of France?",
                                     "What is the best way to learn Python?", "What is Zilliz?",
                                     'What does the term "embedding" mean?',
                                     "Why would the `StatusRuntimeException: OK` exception be thrown?",
                                     'What is "redislock" and does it provide a lock in Go?',
                                     "Is there an off-chain database that supports update operations?"],
                         ids=["whole", "expletive-it", "existential-there", "definite-with-which",
                              "own-antecedent", "ordinal-with-its-set", "superlative-with-its-set", "a-name",
                              "definite-quoted", "definite-code-span", "quoted-antecedent", "relative-that"])
def test_a_whole_question_stands_alone(message: str) -> None:
    assert stands_alone(message)


@pytest.mark.parametrize(("message", "asks"), [("How do I reset my router password?", True),
                                               ("Is it safe to pay with PayPal on the website?", True),
                                               ("Will I lose my settings?", False),
                                               ("Can you book a table for two at Sino?", False),
                                               ("I want to book a table at 7pm.", False)])
def test_a_request_to_act_is_no_question_for_information(message: str, asks: bool) -> None:
    assert asks_for_information(message) is asks


SETTLED = ("My card ending 4242 was charged twice.", "I can see both charges on card 4242; the second is refunded.")


def test_a_question_for_information_after_settled_unrelated_history_is_a_single_turn() -> None:
    assert dependency_context(turns(*SETTLED), "How do I reset my router password?") is None


def test_a_question_for_information_after_an_answered_unrelated_question_is_a_single_turn() -> None:
    # The user only asked (a name, and a number in the answer, are no constraint on an unrelated new question).
    asked = ("What is the capital of France?", "Paris, with about 2.1 million inhabitants.")
    assert dependency_context(turns(*asked), "How do I reverse a list in Python?") is None


@pytest.mark.parametrize(("history", "question"), [
    (SETTLED, "How do I see the charges on my card?"),
    (("Can you get me a weather report for Larkspur?", "It will be 75 degrees."),
     "What's happening in Morgan Hill on March 4th?"),
    (("I'm vegetarian.", "Noted!"), "What is a good recipe for dinner tonight?"),
    (SETTLED, "Can you reset my router password?"),
], ids=["shares-a-word", "asked-to-act-before", "constraint-not-taken-up", "request-to-act"])
def test_history_that_may_change_the_question_keeps_it_a_follow_up(history: tuple[str, str], question: str) -> None:
    assert dependency_context(turns(*history), question) is not None


def test_only_the_last_turns_are_read() -> None:
    old = turns(*[f"Old message {i} about order {i}." for i in range(MAX_TURNS)])
    context = dependency_context([*old, *turns(*REQUEST)], FOLLOW_UP)
    assert context is not None and "Old message 0 " not in context and context.endswith(REQUEST[-1])


@pytest.mark.parametrize(("sentence", "found"), [
    ("I can help you delete the account.", ("delete",)),
    ("Please help me reset my password.", ("reset",)),
    ("Sure, let's reset my password.", ("reset",)),
    ("I want to cancel my order.", ("cancel",)),
    ("While you travel I can freeze the membership.", ("freeze",)),
    ("Can you book a table for two?", ("book",)),
    ("We'll send a courier tomorrow.", ("send",)),
    ("I pay $45 a month.", ()),
    ("How do I open it?", ()),
])
def test_the_actions_a_sentence_offers_or_asks_for_are_read_from_its_grammar(sentence: str,
                                                                              found: tuple[str, ...]) -> None:
    assert actions(sentence) == found
