"""Generate datasets/conv2-dev.jsonl and datasets/conv2-test.jsonl: conversation pairs whose last user message is
the same and whose earlier turns agree (same answer) or differ in one detail (must not be served).

Every sentence here was written for this script by the Deja team. A *family* is one scenario (a domain, a
system prompt, one or two exchanges with slots, reworded versions of them, a follow-up); each family gives one
pair per kind it supports, for two draws of its slots:

* must-not (0): ``value_changed`` (an order or ticket code with two digits swapped, an amount, a date),
  ``changed_quantity`` (two nights vs three), ``changed_account`` (an account or card number), ``swapped_choice``
  (one destination, item or plan for another), ``option_order`` (the assistant lists the same options in another
  order; the user picks "the first one"), ``other_intent`` (the user asked for another action earlier),
  ``different_context`` (another family's conversation, same follow-up);
* same answer (1): ``reworded_context``, ``chatter`` (greetings, apologies, thanks, small talk added),
  ``irrelevant_history`` (an unrelated exchange first).

Half the must-not pairs also carry chatter on one side, so a difference of form never hides a difference of
detail. Families are dealt per domain alternately to dev and test (seeded): no test family is seen in dev.
Each pair is tagged with the API whose shape it is sent in (``chat``, ``messages``, ``responses``; see
`eval.shapes`); the turns are stored in chat shape, the canonical form every dialect reduces to.

Usage: python -m training.data.make_conversations [--seed 26]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = {"dev": ROOT / "datasets" / "conv2-dev.jsonl", "test": ROOT / "datasets" / "conv2-test.jsonl"}
SEED = 26
DRAWS = 3
APIS = ("chat", "messages", "responses")
SAME_KINDS = ("reworded_context", "chatter", "irrelevant_history")
SLOT_KINDS = ("value_changed", "changed_quantity", "changed_account", "swapped_choice", "other_intent")


@dataclass(frozen=True)
class Slot:
    """Values a slot takes. `kind` is the must-not kind a change of it makes; `code` slots change by swapping two
    digits of the drawn value (1042 -> 1024)."""

    kind: str
    pool: tuple[str, ...] = ()
    code: str = ""  # a template of a code: '#' is a digit ("ORD-####")


@dataclass(frozen=True)
class Family:
    name: str
    domain: str
    system: str
    turns: tuple[tuple[str, str], ...]
    reworded: tuple[tuple[str, str], ...]
    follow: str
    slots: dict[str, Slot] = field(default_factory=dict)
    # three options the assistant offers, in `{options}`; the follow-up picks one by position
    options: tuple[str, ...] = ()


def _s(kind: str, *pool: str) -> Slot:
    return Slot(kind, pool)


def _code(kind: str, template: str) -> Slot:
    return Slot(kind, code=template)


FAMILIES: tuple[Family, ...] = (
    # ---------------------------------------------------------------- support: orders
    Family(
        "late_parcel", "support", "You answer customers of Parcelly, an online homeware shop.",
        (("My order {order} was supposed to arrive on {day} and it still isn't here.",
          "I found order {order}. It left our warehouse with {carrier} and the tracking shows a delay."),),
        (("Order number {order} should have been delivered {day}, but nothing has turned up.",
          "Order {order} was handed over to {carrier}; their tracking says it is running late."),),
        "Can you chase it for me?",
        {"order": _code("value_changed", "#####"), "day": _s("swapped_choice", "Monday", "Tuesday", "Thursday"),
         "carrier": _s("swapped_choice", "DHL", "UPS", "FedEx", "Royal Mail")},
    ),
    Family(
        "damaged_item", "support", "You are the support agent of Lumo Lighting.",
        (("The {item} I got in order {order} arrived cracked.",
          "I'm sorry it came damaged. For order {order} I can send a replacement {item} or refund it."),
         ("I'd like to {intent} it.", "Understood, I can {intent} it for you today.")),
        (("Order {order} came with the {item} broken in the box.",
          "That should not happen. On order {order} we can either replace the {item} or give your money back."),
         ("Please {intent} it.", "Okay, I will {intent} it today.")),
        "How long will that take?",
        {"order": _code("value_changed", "LU-####"), "item": _s("swapped_choice", "desk lamp", "ceiling shade",
                                                                 "floor lamp", "wall light"),
         "intent": _s("other_intent", "replace", "refund", "repair")},
    ),
    Family(
        "wrong_size", "support", "You help shoppers of Threadline, a clothing store.",
        (("I ordered {qty} pairs of trainers in size {size} but they feel too tight.",
          "No problem. You can exchange the {qty} pairs within 30 days of delivery."),),
        (("The {qty} pairs of trainers I bought in a size {size} are too small for me.",
          "That's fine, an exchange for those {qty} pairs is possible up to 30 days after delivery."),),
        "What do I need to do?",
        {"qty": _s("changed_quantity", "two", "three", "four"), "size": _s("value_changed", "8", "9", "10", "11")},
    ),
    Family(
        "return_label", "support", "You are the returns desk of Kettle & Co.",
        (("I want to send back the {item} from order {order}.",
          "Sure. The {item} from order {order} qualifies for a free return. Pick one of these: {options}."),),
        (("Order {order}: I'd like to return the {item}.",
          "Of course, the {item} on order {order} can be returned for free. Your choices are {options}."),),
        "I'll go with the first one.",
        {"order": _code("value_changed", "KC####"), "item": _s("swapped_choice", "kettle", "toaster", "teapot")},
        ("drop it at a post office", "book a courier pickup", "bring it to a store"),
    ),
    # ---------------------------------------------------------------- travel
    Family(
        "hotel_booking", "travel", "You are the booking assistant of Staywell Hotels.",
        (("I'd like to book {qty} nights in {city} from {date}.",
          "I can do {qty} nights in {city} starting {date}. Standard rooms are available."),),
        (("Could you reserve a room in {city} for {qty} nights, arriving {date}?",
          "Yes: {city}, {qty} nights from {date}, and a standard room is free."),),
        "What would the total be?",
        {"qty": _s("changed_quantity", "two", "three", "five"), "city": _s("swapped_choice", "Lisbon", "Vienna",
                                                                          "Dublin", "Prague"),
         "date": _s("value_changed", "June 4", "June 14", "July 4")},
    ),
    Family(
        "flight_change", "travel", "You help travellers of Skylark Air.",
        (("My booking reference is {ref} and I fly to {city} on {date}.",
          "Thanks, booking {ref} to {city} on {date} is confirmed in economy."),
         ("I need to {intent} that flight.", "I can {intent} booking {ref} for you.")),
        (("Booking {ref}: I'm flying to {city} on {date}.",
          "Got it, {ref} to {city} on {date}, economy, confirmed."),
         ("I have to {intent} the flight.", "Sure, I can {intent} {ref}.")),
        "Is there a fee?",
        {"ref": _code("value_changed", "SK####"), "city": _s("swapped_choice", "Madrid", "Oslo", "Athens", "Nice"),
         "date": _s("value_changed", "May 3", "May 13", "May 30"),
         "intent": _s("other_intent", "cancel", "change", "upgrade")},
    ),
    Family(
        "car_rental", "travel", "You are the rental desk of Roadly Cars.",
        (("I need a car in {city} for {qty} days.",
          "For {qty} days in {city} we have these: {options}."),),
        (("Can I rent a car in {city}? It would be for {qty} days.",
          "In {city}, for {qty} days, you can pick from {options}."),),
        "The first one, please. What does it cost?",
        {"qty": _s("changed_quantity", "three", "four", "seven"),
         "city": _s("swapped_choice", "Seville", "Porto", "Naples", "Lyon")},
        ("a compact hatchback", "an electric saloon", "a seven-seat van"),
    ),
    Family(
        "tour_tickets", "travel", "You sell tickets for CityWalk tours.",
        (("I'd like {qty} tickets for the {tour} on {date}.",
          "{qty} tickets for the {tour} on {date} come to {amount}."),),
        (("Can I get {qty} places on the {tour}, {date}?",
          "Sure, {qty} places on the {tour} for {date}: that is {amount} in total."),),
        "Can I pay at the start point?",
        {"qty": _s("changed_quantity", "two", "three", "six"),
         "tour": _s("swapped_choice", "harbour walk", "castle tour", "food tour"),
         "date": _s("value_changed", "August 9", "August 19", "September 9"),
         "amount": _s("value_changed", "$48", "$84", "$72")},
    ),
    # ---------------------------------------------------------------- retail
    Family(
        "jacket_stock", "retail", "You are the shop assistant of Northpeak Outdoor.",
        (("Do you have the {color} rain jacket in size {size}?",
          "The {color} rain jacket in size {size} is in stock online and ships in two days."),),
        (("Is the rain jacket in {color}, size {size}, available?",
          "Yes, we have the {color} one in {size} online, dispatched within two days."),),
        "Can I reserve it?",
        {"color": _s("swapped_choice", "blue", "red", "green", "black"),
         "size": _s("value_changed", "S", "M", "L", "XL")},
    ),
    Family(
        "gift_card", "retail", "You help customers of Bloom Market.",
        (("I have a gift card {card} with {amount} left on it.",
          "Gift card {card} shows a balance of {amount} and it is valid until December."),),
        (("There's {amount} remaining on my gift card, number {card}.",
          "I checked card {card}: {amount} is left, usable until December."),),
        "Can I use it for delivery fees?",
        {"card": _code("changed_account", "GC-######"), "amount": _s("value_changed", "$25", "$52", "$40")},
    ),
    Family(
        "phone_plan", "retail", "You are the sales assistant of Wavecell Mobile.",
        (("I want a new phone plan with at least {qty} GB of data.",
          "These plans have {qty} GB or more: {options}."),),
        (("Which of your phone plans give me {qty} GB of data or more?",
          "With {qty} GB or more you can choose {options}."),),
        "I'll take the first one.",
        {"qty": _s("changed_quantity", "10", "20", "50")},
        ("Wave Lite", "Wave Plus", "Wave Max"),
    ),
    Family(
        "sofa_delivery", "retail", "You answer questions for Hearth Furniture.",
        (("I bought the {item} and want it delivered to {city}.",
          "The {item} can be delivered to {city}; the earliest slot is {date}."),
         ("Can you {intent} it?", "Yes, I can {intent} it.")),
        (("The {item} I purchased needs to go to {city}.",
          "We deliver the {item} to {city}, first free slot {date}."),
         ("Would you {intent} it?", "Sure, I will {intent} it.")),
        "Will I get a text before they come?",
        {"item": _s("swapped_choice", "corner sofa", "oak wardrobe", "dining table"),
         "city": _s("swapped_choice", "Leeds", "Bristol", "Glasgow"),
         "date": _s("value_changed", "April 2", "April 12", "April 22"),
         "intent": _s("other_intent", "assemble", "gift wrap", "insure")},
    ),
    # ---------------------------------------------------------------- banking
    Family(
        "card_block", "banking", "You are the assistant of Harbor Bank.",
        (("My card ending {card} was declined at a shop this morning.",
          "I see a fraud hold on the card ending {card} after a payment of {amount}."),),
        (("This morning a shop declined my card, the one ending in {card}.",
          "The card ending {card} has a fraud hold because of a {amount} payment."),),
        "Can you lift it?",
        {"card": _code("changed_account", "####"), "amount": _s("value_changed", "$310", "$130", "$1,300")},
    ),
    Family(
        "transfer_status", "banking", "You help customers of Ledger Bank.",
        (("I sent {amount} from account {account} to my landlord on {date}.",
          "The transfer of {amount} from account {account} on {date} is still pending."),),
        (("On {date} I transferred {amount} to my landlord from account {account}.",
          "From account {account}, the {amount} transfer made {date} is pending."),),
        "When will it arrive?",
        {"amount": _s("value_changed", "$950", "$590", "$1,950"), "account": _code("changed_account", "##-#####"),
         "date": _s("value_changed", "March 1", "March 10", "March 11")},
    ),
    Family(
        "savings_choice", "banking", "You are the savings advisor of Crest Bank.",
        (("I want to put {amount} aside for {qty} years.",
          "For {amount} over {qty} years I can offer: {options}."),),
        (("Where should I save {amount} for {qty} years?",
          "Saving {amount} for {qty} years, your options are {options}."),),
        "Let's do the first one. How do I open it?",
        {"amount": _s("value_changed", "$5,000", "$50,000", "$15,000"),
         "qty": _s("changed_quantity", "two", "three", "five")},
        ("a fixed-term deposit", "an easy-access saver", "a cash ISA"),
    ),
    Family(
        "loan_payment", "banking", "You answer questions about Pillar Bank loans.",
        (("I'd like to {intent} my car loan, account {account}.",
          "For loan account {account}, I can {intent} it; the balance is {amount}."),),
        (("Account {account}: I want to {intent} the car loan.",
          "Loan {account} has {amount} outstanding, and I can {intent} it for you."),),
        "Will that affect my credit score?",
        {"intent": _s("other_intent", "pay off", "refinance", "pause"),
         "account": _code("changed_account", "L-######"), "amount": _s("value_changed", "$8,400", "$4,800")},
    ),
    # ---------------------------------------------------------------- software
    Family(
        "license_seats", "software", "You are the billing assistant of Codepad IDE.",
        (("We have {qty} seats on the {plan} plan.",
          "Your workspace has {qty} seats on {plan}, billed {period}."),),
        (("Our team pays for {qty} seats, on {plan}.",
          "I see {qty} {plan} seats on your workspace, with {period} billing."),),
        "How much would it cost to add one more?",
        {"qty": _s("changed_quantity", "five", "twelve", "twenty"),
         "plan": _s("swapped_choice", "Team", "Business", "Enterprise"),
         "period": _s("swapped_choice", "monthly", "annually")},
    ),
    Family(
        "bug_ticket", "software", "You are the support bot of Trackly, an issue tracker.",
        (("Ticket {ticket} says the export to {format} fails on version {version}.",
          "Ticket {ticket} is a known problem with {format} export in {version}; a fix is planned."),),
        (("About ticket {ticket}: exporting to {format} breaks in version {version}.",
          "Yes, {ticket} matches a known {format} export bug in {version}, and a fix is on the way."),),
        "Is there a workaround?",
        {"ticket": _code("value_changed", "TR-####"), "format": _s("swapped_choice", "CSV", "PDF", "Excel"),
         "version": _s("value_changed", "4.2", "4.12", "2.4")},
    ),
    Family(
        "deploy_region", "software", "You help users of Stackyard hosting.",
        (("I'm deploying my app to the {region} region.",
          "Deploying to {region} works. You can choose a runtime: {options}."),),
        (("My app is going to run in {region}.",
          "That region, {region}, is supported. Runtimes on offer: {options}."),),
        "I'll pick the first one. How do I set it up?",
        {"region": _s("swapped_choice", "Frankfurt", "Singapore", "Toronto")},
        ("Node 20", "Python 3.12", "Go 1.22"),
    ),
    Family(
        "password_reset", "software", "You are the account assistant of Notebin.",
        (("I can't log in to my account {user}.",
          "Account {user} was locked after {qty} failed attempts."),
         ("I want to {intent}.", "I can help you {intent}.")),
        (("Logging in to account {user} doesn't work.",
          "The account {user} got locked: there were {qty} failed sign-ins."),
         ("Please help me {intent}.", "Sure, let's {intent}.")),
        "What happens next?",
        {"user": _s("changed_account", "maria.k", "jonas88", "priya_dev"),
         "qty": _s("changed_quantity", "five", "ten", "three"),
         "intent": _s("other_intent", "reset my password", "unlock the account", "delete the account")},
    ),
)

GREETINGS = ("Hi there!", "Hello!", "Hey, good morning.", "Hi, hope you're doing well.", "Good afternoon!",
             "Hello again.")
APOLOGIES = ("Sorry to bother you.", "Apologies for the long message.", "Sorry, I'm a bit stressed today.",
             "Sorry if this is a silly question.")
SMALL_TALK = ("Lovely weather today, by the way.", "Hope your day is going well.", "It's been a busy week!",
              "Thanks for being so quick.")
REPLIES = ("Happy to help!", "No worries at all.", "Thanks for reaching out.", "Glad to help.",
           "Thank you for your patience.")
CHAT_EXCHANGES = (("Hi!", "Hello! How can I help you today?"),
                  ("Hey, are you a real person?", "I'm the virtual assistant, happy to help."),
                  ("Good morning.", "Good morning! What can I do for you?"))
IRRELEVANT = (
    ("Do you have a mobile app?", "Yes, our app is on iOS and Android."),
    ("What are your opening hours?", "The help line is open every weekday."),
    ("Can I change the language of the website?", "Yes, there is a language menu at the bottom of every page."),
    ("Is there a newsletter?", "There is, you can sign up in your profile settings."),
    ("Where can I find your privacy policy?", "It is linked in the footer of the site."),
)


def _swap_digits(value: str, rng: random.Random) -> str:
    """`value` with two different adjacent digits swapped (1042 -> 1024)."""
    spots = [i for i in range(len(value) - 1) if value[i].isdigit() and value[i + 1].isdigit()
             and value[i] != value[i + 1]]
    i = rng.choice(spots)
    return value[:i] + value[i + 1] + value[i] + value[i + 2:]


def _draw(slot: Slot, rng: random.Random) -> str:
    if slot.code:
        while True:
            value = "".join(str(rng.randint(1, 9)) if c == "#" else c for c in slot.code)
            if sum(c.isdigit() for c in value) < 2 or len({c for c in value if c.isdigit()}) > 1:
                return value
    return rng.choice(slot.pool)


def _changed(slot: Slot, value: str, rng: random.Random) -> str:
    if slot.code:
        return _swap_digits(value, rng)
    return rng.choice([v for v in slot.pool if v != value])


def _listing(options: tuple[str, ...], numbered: bool) -> str:
    if numbered:
        return "\n" + "\n".join(f"{i}. {o}" for i, o in enumerate(options, 1))
    return f"{', '.join(options[:-1])} or {options[-1]}"


def _render(turns: tuple[tuple[str, str], ...], values: dict[str, str]) -> list[list[str]]:
    return [[u.format(**values), a.format(**values)] for u, a in turns]


def _messages(family: Family, exchanges: list[list[str]], follow: str, system: str = "") -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system or family.system}]
    for user, assistant in exchanges:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return [*messages, {"role": "user", "content": follow}]


def _with_chatter(exchanges: list[list[str]], rng: random.Random) -> list[list[str]]:
    """The same exchanges with greetings, apologies, thanks or small talk added (never a value)."""
    out = [list(e) for e in exchanges]
    out[0][0] = f"{rng.choice(GREETINGS)} {rng.choice(APOLOGIES + SMALL_TALK + ('',))} {out[0][0]}".replace("  ", " ")
    out[-1][1] = f"{rng.choice(REPLIES)} {out[-1][1]}"
    if rng.random() < 0.5:
        out[-1][1] += f" {rng.choice(SMALL_TALK)}"
    if rng.random() < 0.4:
        out.insert(0, list(rng.choice(CHAT_EXCHANGES)))
    return out


@dataclass
class _Pairs:
    rng: random.Random
    rows: list[dict[str, object]] = field(default_factory=list)

    def add(self, family: Family, kind: str, same: bool, a: list[dict[str, str]], b: list[dict[str, str]]) -> None:
        self.rows.append({"id": f"c2-{family.name}-{len(self.rows) + 1:03d}", "a": a, "b": b, "kind": kind,
                          "same_answer": same, "domain": family.domain, "family": family.name,
                          "api": APIS[len(self.rows) % len(APIS)]})


def _values(family: Family, rng: random.Random, numbered: bool, order: tuple[str, ...]) -> dict[str, str]:
    values = {name: _draw(slot, rng) for name, slot in family.slots.items()}
    if family.options:
        values["options"] = _listing(order, numbered)
    return values


def family_pairs(family: Family, others: list[Family], out: _Pairs) -> None:
    """One pair per kind this family supports, for one draw of its slots."""
    rng = out.rng
    numbered = rng.random() < 0.5
    values = _values(family, rng, numbered, family.options)
    base = _messages(family, _render(family.turns, values), family.follow)
    reworded = _messages(family, _render(family.reworded, values), family.follow)
    out.add(family, "reworded_context", True, base, reworded)
    out.add(family, "chatter", True, base,
            _messages(family, _with_chatter(_render(family.turns, values), rng), family.follow))
    history = [list(rng.choice(IRRELEVANT)), *_render(family.turns, values)]
    out.add(family, "irrelevant_history", True, base, _messages(family, history, family.follow))

    def must_not(kind: str, changed: dict[str, str]) -> None:
        turns = family.reworded if rng.random() < 0.25 else family.turns
        exchanges = _render(turns, changed)
        if rng.random() < 0.5:
            exchanges = _with_chatter(exchanges, rng)
        out.add(family, kind, False, base, _messages(family, exchanges, family.follow))

    for name, slot in family.slots.items():
        must_not(slot.kind, {**values, name: _changed(slot, values[name], rng)})
    if family.options:
        order = next(p for p in rng.sample(list(itertools.permutations(family.options)), 6)
                     if p != family.options)
        must_not("option_order", {**values, "options": _listing(order, numbered)})
    other = rng.choice(others)
    other_values = {name: _draw(slot, rng) for name, slot in other.slots.items()}
    if other.options:
        other_values["options"] = _listing(other.options, numbered)
    # the same system prompt: the gateway only compares conversations of one deployment
    out.add(family, "different_context", False, base,
            _messages(other, _render(other.turns, other_values), family.follow, family.system))


def split(families: tuple[Family, ...], rng: random.Random) -> dict[str, str]:
    """Family name -> part, dealt per domain alternately (the first part of each domain drawn)."""
    parts: dict[str, str] = {}
    for domain in sorted({f.domain for f in families}):
        names = [f.name for f in families if f.domain == domain]
        rng.shuffle(names)
        first = rng.choice(("dev", "test"))
        second = "test" if first == "dev" else "dev"
        for i, name in enumerate(names):
            parts[name] = first if i % 2 == 0 else second
    return parts


def build(seed: int = SEED) -> dict[str, list[dict[str, object]]]:
    rng = random.Random(seed)
    parts = split(FAMILIES, rng)
    rows: dict[str, list[dict[str, object]]] = {}
    for part in ("dev", "test"):
        members = [f for f in FAMILIES if parts[f.name] == part]
        out = _Pairs(random.Random(f"{seed}-{part}"))
        for _ in range(DRAWS):
            for family in members:
                family_pairs(family, [f for f in members if f.domain != family.domain], out)
        for row in out.rows:
            row["id"] = f"{row['id']}-{part}"
        rows[part] = out.rows
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    for part, rows in build(args.seed).items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        OUT[part].write_text(text, encoding="utf-8")
        same = sum(1 for r in rows if r["same_answer"])
        print(f"{OUT[part].name}: {len(rows)} pairs ({same} same answer, {len(rows) - same} must not)")


if __name__ == "__main__":
    main()
