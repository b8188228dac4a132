"""The relevant context of a conversation: what the follow-up depends on stays, chatter and unrelated turns go."""

from __future__ import annotations

from typing import Any

from index.embedding.window import beyond_window
from index.request.context import MAX_TURNS, relevant_context


def turns(*texts: str) -> list[dict[str, Any]]:
    """User and assistant turns, alternating, starting with the user."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


REQUEST = ("The teapot from order PT-4821 arrived with a crack down the side.",
           "I'm sorry about that. For order PT-4821 I can send a new teapot or refund it.",
           "I'd rather you refund it.", "No problem, I'll refund it today.")
BARE = relevant_context(turns(*REQUEST), "How long will that take?")


def test_the_request_and_the_choice_make_the_context() -> None:
    assert BARE == ("The teapot from order PT-4821 arrived with a crack down the side.\n"
                    "For order PT-4821 I can send a new teapot or refund it.\nI'd rather you refund it.\n"
                    "I'll refund it today.")


def test_small_talk_with_numbers_names_and_negations_leaves_the_context() -> None:
    told = turns("Hi there! My son turned 7 last week and the house is still full of balloons. I'm not very good "
                 "with this kind of thing, my wife Anna usually handles it. Anyway, here's my question: "
                 + REQUEST[0] + " Thanks so much in advance.",
                 "Happy belated birthday to your son! " + REQUEST[1], *REQUEST[2:])
    assert relevant_context(told, "How long will that take?") == BARE


def test_an_unrelated_earlier_exchange_leaves_the_context() -> None:
    history = turns("Do you ship to Canada?", "Yes, shipping to Canada takes 5 to 7 business days.", *REQUEST)
    assert relevant_context(history, "How long will that take?") == BARE


def test_a_short_request_that_refers_back_keeps_the_turn_it_follows_up() -> None:
    context = relevant_context(turns("I bought the corner sofa and want it delivered to Leeds.",
                                     "The corner sofa can be delivered to Leeds on April 22.",
                                     "Can you insure it?", "Yes, I can insure it."), "Will I get a text?")
    assert "Leeds" in context and "insure" in context


def test_a_reply_that_asks_for_more_joins_the_turns_of_one_request() -> None:
    context = relevant_context(turns("I have a question about order 1042.", "Sure, what happened?",
                                     "The parcel never arrived.", "Tracking shows it stuck in transit."),
                               "Can you chase it?")
    assert "1042" in context and "parcel" in context


def test_a_plain_answer_does_not_join_an_unrelated_question_to_the_request() -> None:
    context = relevant_context(turns("Is there a dark mode in the editor?", "Yes.",
                                     "My invoice for March shows a duplicate charge.",
                                     "I see the duplicate charge on your March invoice."), "Can you refund it?")
    assert "March" in context and "dark mode" not in context


def test_a_sentence_opening_with_a_pronoun_keeps_the_one_it_refers_to() -> None:
    context = relevant_context(turns("My son is 8 and weighs about 25 kg. He has a fever after his flu shot.",
                                     "A mild fever after a vaccine is common and usually passes."),
                               "How much ibuprofen can he have?")
    assert "25 kg" in context


def test_the_options_a_reply_lists_stay_with_it() -> None:
    context = relevant_context(turns("I'm deploying my app to the Frankfurt region.",
                                     "Deploying to Frankfurt works. You can choose a runtime:\n1. Node 20\n"
                                     "2. Python 3.12\n3. Go 1.22"), "I'll pick the first one.")
    assert context.endswith("1. Node 20\n2. Python 3.12\n3. Go 1.22")


def test_a_value_the_reply_repeats_stays_when_the_reply_greets_the_small_talk_more() -> None:
    context = relevant_context(turns("My daughter Emma starts school on Monday at Hill Park school. "
                                     "My order 10427 has not arrived.",
                                     "Good luck to Emma at Hill Park school on Monday! Order 10427 is delayed."),
                               "Can you chase it?")
    assert "10427" in context


def test_a_long_retelling_is_cut_to_the_embedders_window() -> None:
    detail = " ".join(f"The teapot from order PT-4821 has crack number {n} on the spout." for n in range(40))
    context = relevant_context(turns(detail, "For order PT-4821 I can send a new teapot."), "How long?")
    assert context and not beyond_window(context) and "PT-4821" in context


def test_the_last_reply_stays_from_where_it_turns_to_the_request() -> None:
    context = relevant_context(turns("It's been raining for 5 days here. I pay $45 a month for the Off-Peak membership "
                                     "and I'm away on a work trip.",
                                     "Hope the rain stops soon. I see the Off-Peak plan at $45. I can freeze it "
                                     "while you're gone."), "Would I still be charged?")
    assert context.endswith("I see the Off-Peak plan at $45. I can freeze it while you're gone.")
    assert "rain" not in context


def test_a_number_in_a_replys_answer_to_small_talk_leaves_the_context() -> None:
    context = relevant_context(turns("I turned 60 last month. I need to export the Q4 budget sheet as CSV.",
                                     "Happy belated 60th! The Q4 budget sheet can be exported as CSV, in 2 clicks."),
                               "Will the formulas be kept?")
    assert "60" not in context and "2 clicks" in context


def test_only_the_last_turns_are_read() -> None:
    old = turns("My order 5550 is late.", "Order 5550 is delayed.") * MAX_TURNS
    context = relevant_context([*old, *turns(*REQUEST)], "How long will that take?")
    assert context == BARE


def test_a_short_request_about_what_the_reply_named_keeps_that_reply() -> None:
    context = relevant_context(turns("I can't log in to my account maria.k.",
                                     "Account maria.k was locked after five failed attempts.",
                                     "I want to delete the account.", "I can help you delete the account."),
                               "What happens next?")
    assert "maria.k" in context and "delete" in context
