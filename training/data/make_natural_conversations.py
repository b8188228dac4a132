"""Generate datasets/conv3-dev.jsonl and datasets/conv3-test.jsonl: conversation pairs told the way people talk
(greetings, small talk holding numbers, names and negations, long retellings, an unrelated question first, a
follow-up reworded), each with the same last request as its base or one that must not be served.

Every sentence here was written for this script by the Deja team. A *family* is one scenario (a system prompt,
the request in one or two exchanges, the same request told in other words, a follow-up and a reworded
follow-up, values that can change). The chatter, the asides and the unrelated questions come in two pools,
one per part, and the families are dealt alternately to dev and test, so nothing of the test part (scenario,
small talk, unrelated question) is seen in dev. Kinds:

* same answer: ``reworded_context`` (the request told in other words, a value written another way: "$48" /
  "48 dollars"), ``chatter`` (the request told at length inside greetings and small talk, with numbers, names
  and a "not" in the small talk, often past the embedder's ~1,000-character window), ``irrelevant_history`` (an
  unrelated question and its answer first), ``reworded_follow_up`` (the follow-up in other words);
* must not: ``value_changed`` (a code, amount or date of the request), ``swapped_choice`` (another item),
  ``other_intent`` (another action asked for earlier), ``different_context`` (another family's request, the
  same follow-up); half of them are told at length too, so chatter never hides a difference.

A third part, ``holdout`` (datasets/conv3-holdout.jsonl), has families, small talk and unrelated questions
written after the rule was settled on dev (and after test had been read once): it is measured once.

Usage: python -m training.data.make_natural_conversations [--seed 34]
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = {"dev": ROOT / "datasets" / "conv3-dev.jsonl", "test": ROOT / "datasets" / "conv3-test.jsonl",
       "holdout": ROOT / "datasets" / "conv3-holdout.jsonl"}
SEED = 34
DRAWS = 3
APIS = ("chat", "messages", "responses")
Turns = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Family:
    """`slots` maps a slot to its kind of change and its values, each value as its spellings (the first is
    the one the base uses, another the one a retelling may use)."""

    name: str
    domain: str
    system: str
    turns: Turns
    reworded: Turns
    follow: str
    follow_reworded: str
    slots: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = field(default_factory=dict)


F = Family
FAMILIES: tuple[Family, ...] = (
    F("cracked_mug", "support", "You are the customer service assistant of Potterly, a ceramics shop.",
      (("The {item} from order {order} arrived with a crack down the side.",
        "I'm sorry about that. For order {order} I can send a new {item} or refund it."),
       ("I'd rather you {intent} it.", "No problem, I'll {intent} it today.")),
      (("Order {order} turned up and the {item} in it is cracked.",
        "That shouldn't happen. On order {order} we can replace the {item} or give you a refund."),
       ("Please {intent} it.", "Sure, I'll {intent} it for you today.")),
      "How long will that take?", "How long does that usually take?",
      {"order": ("value_changed", (("PT-4821",), ("PT-4281",), ("PT-7730",))),
       "item": ("swapped_choice", (("teapot",), ("serving bowl",), ("mug set",))),
       "intent": ("other_intent", (("refund",), ("replace",)))}),
    F("gym_freeze", "membership", "You are the membership assistant of Ironworks Gym.",
      (("I pay {amount} a month for the {plan} membership and I'm travelling for work.",
        "You're on {plan} at {amount} a month. While you travel I can {intent} the membership."),),
      (("My {plan} membership costs me {amount} monthly, but I'll be away on a work trip.",
        "I see the {plan} plan, {amount} per month. I can {intent} it while you're away."),),
      "Would I still be charged?", "Do I still get billed for it?",
      {"amount": ("value_changed", (("$45", "45 dollars"), ("$54", "54 dollars"), ("$65", "65 dollars"))),
       "plan": ("swapped_choice", (("Off-Peak",), ("Premium",), ("Student",))),
       "intent": ("other_intent", (("freeze",), ("cancel",)))}),
    F("hotel_parking", "travel", "You are the reservations assistant of the Harbourside Hotel.",
      (("I have a booking for {nights} nights from {date}, reference {ref}.",
        "I found reservation {ref}: {nights} nights from {date}, a double room."),),
      (("Reservation {ref}, I'm staying {nights} nights starting {date}.",
        "Yes, {ref} is a double room for {nights} nights from {date}."),),
      "Is parking included?", "Does the price include parking?",
      {"nights": ("value_changed", (("2", "two"), ("3", "three"), ("4", "four"))),
       "date": ("value_changed", (("May 9", "9 May"), ("May 19", "19 May"), ("June 9", "9 June"))),
       "ref": ("value_changed", (("HH-55817",), ("HH-58517",), ("HH-31094",)))}),
    F("laptop_repair", "electronics", "You are the repair desk assistant of Fixwell Electronics.",
      (("My {device} won't charge any more, it's still under warranty until {date}.",
        "A {device} that won't charge is covered by the warranty until {date}. I can {intent} it."),),
      (("The {device} has stopped charging. Warranty runs until {date}.",
        "That fault is covered, your {device} warranty lasts until {date}, so I can {intent} it."),),
      "What do I need to send in?", "What should I include when I send it?",
      {"device": ("swapped_choice", (("laptop",), ("tablet",), ("smartwatch",))),
       "date": ("value_changed", (("March 2027", "03/2027"), ("March 2026", "03/2026"))),
       "intent": ("other_intent", (("repair",), ("replace",)))}),
    F("tax_deadline", "finance", "You help self-employed customers of Taxly.",
      (("I earned {amount} from freelance design work in {year}.",
        "For {amount} of freelance income in {year} you'll need to file a self-assessment return."),),
      (("In {year} my freelance design income came to {amount}.",
        "With {amount} earned freelancing in {year}, a self-assessment return is required."),),
      "When is the deadline?", "By when do I have to file it?",
      {"amount": ("value_changed", (("$18,000", "18000 dollars"), ("$81,000", "81000 dollars"))),
       "year": ("value_changed", (("2024",), ("2025",)))}),
    F("recipe_swap", "cooking", "You are a friendly cooking assistant.",
      (("I'm making a {dish} for {people} people.",
        "For {people} people, a {dish} needs about {amount} of flour."),),
      (("I want to cook a {dish} that serves {people}.",
        "A {dish} for {people} takes roughly {amount} of flour."),),
      "Can I use oat flour instead?", "Would oat flour work in its place?",
      {"dish": ("swapped_choice", (("banana bread",), ("pizza base",), ("pancake batch",))),
       "people": ("value_changed", (("4", "four"), ("6", "six"), ("8", "eight"))),
       "amount": ("value_changed", (("300 g",), ("450 g",)))}),
    F("visa_check", "travel", "You are the travel documents assistant of Wayfare.",
      (("I'm a {nationality} citizen flying to {country} for {days} days.",
        "{nationality} citizens visiting {country} for {days} days need to check the entry rules first."),),
      (("I hold a {nationality} passport and I'll be in {country} for {days} days.",
        "For a {days}-day trip to {country} on a {nationality} passport, the entry rules apply."),),
      "Do I need a visa?", "Is a visa required for me?",
      {"nationality": ("swapped_choice", (("Canadian",), ("Indian",), ("Brazilian",))),
       "country": ("swapped_choice", (("Japan",), ("Australia",), ("Turkey",))),
       "days": ("value_changed", (("10", "ten"), ("90", "ninety")))}),
    F("router_reset", "internet", "You are the technical support assistant of Linkfast Broadband.",
      (("My router model {model} keeps dropping the wifi every evening.",
        "The {model} can drop wifi when its firmware is old. I can {intent} it remotely."),),
      (("Every evening the wifi on my {model} router cuts out.",
        "That's a known issue with older firmware on the {model}. I'm able to {intent} it from here."),),
      "Will I lose my settings?", "Are my settings going to be wiped?",
      {"model": ("value_changed", (("LF-300",), ("LF-330",), ("LF-900",))),
       "intent": ("other_intent", (("update",), ("factory reset",)))}),
    F("rent_deposit", "housing", "You answer tenants of Keystone Lettings.",
      (("I'm moving out of flat {flat} on {date} and paid a deposit of {amount}.",
        "For flat {flat}, moving out {date}, the deposit held is {amount}."),),
      (("My tenancy at flat {flat} ends on {date}; my deposit was {amount}.",
        "Flat {flat}: end of tenancy {date}, deposit of {amount} on file."),),
      "When do I get it back?", "How soon will the deposit be returned?",
      {"flat": ("value_changed", (("12B",), ("21B",), ("4A",))),
       "date": ("value_changed", (("August 31", "31 August"), ("July 31", "31 July"))),
       "amount": ("value_changed", (("$1,200", "1200 dollars"), ("$2,100", "2100 dollars")))}),
    F("course_refund", "education", "You are the student services assistant of Brightpath Online.",
      (("I signed up for the {course} course on {date} and paid {amount}.",
        "Your {course} enrolment from {date} shows a payment of {amount}. I can {intent} it."),),
      (("On {date} I enrolled in {course}, which cost me {amount}.",
        "I see the {course} course, enrolled {date}, {amount} paid, and I can {intent} it."),),
      "Is there a fee for that?", "Will that cost me anything?",
      {"course": ("swapped_choice", (("Python basics",), ("UX design",), ("data analysis",))),
       "date": ("value_changed", (("April 3", "3 April"), ("April 30", "30 April"))),
       "amount": ("value_changed", (("$199", "199 dollars"), ("$299", "299 dollars"))),
       "intent": ("other_intent", (("refund",), ("transfer",)))}),
    F("pet_vaccine", "pets", "You are the assistant of Pawcare Veterinary Clinic.",
      (("My {pet} is {age} months old and hasn't had the {vaccine} vaccine yet.",
        "At {age} months your {pet} can have the {vaccine} vaccine at any of our clinics."),),
      (("The {vaccine} jab hasn't been done for my {pet}, who's {age} months old.",
        "Your {pet} is {age} months, so the {vaccine} vaccine can be given now."),),
      "How much does it cost?", "What's the price?",
      {"pet": ("swapped_choice", (("puppy",), ("kitten",), ("rabbit",))),
       "age": ("value_changed", (("4", "four"), ("9", "nine"))),
       "vaccine": ("swapped_choice", (("rabies",), ("leptospirosis",)))}),
    F("insurance_claim", "insurance", "You help policyholders of Shieldline Insurance.",
      (("I need to make a claim on policy {policy} for a {damage} at home.",
        "Policy {policy} covers {damage}. I can start the claim for you now."),),
      (("There's been a {damage} in my house and I want to claim on policy {policy}.",
        "I've checked policy {policy}, {damage} is covered and I can open the claim."),),
      "What photos do you need?", "Which pictures should I send you?",
      {"policy": ("value_changed", (("SL-208841",), ("SL-280841",), ("SL-771203",))),
       "damage": ("swapped_choice", (("burst pipe",), ("roof leak",), ("kitchen fire",)))}),
)

# Written after the rule was settled, measured once: families, small talk and unrelated questions of their own.
HOLDOUT: tuple[Family, ...] = (
    F("parcel_locker", "support", "You are the delivery assistant of Boxmile Couriers.",
      (("Parcel {tracking} was left in a locker at {place} instead of my door.",
        "Parcel {tracking} is in the {place} locker. I can {intent} it for you."),),
      (("Instead of coming to my door, parcel {tracking} went to a locker at {place}.",
        "Yes, {tracking} was put in the locker at {place}, and I'm able to {intent} it."),),
      "How long will it stay there?", "How many days do I have before it goes back?",
      {"tracking": ("value_changed", (("BX-77120",), ("BX-71720",), ("BX-30418",))),
       "place": ("swapped_choice", (("the train station",), ("the supermarket",), ("the library",))),
       "intent": ("other_intent", (("redeliver",), ("hold",)))}),
    F("dentist_booking", "health", "You book appointments for Brightsmile Dental.",
      (("I'd like a {service} appointment on {day} for my {who}.",
        "I can book a {service} for your {who} on {day}; we have slots at 9am and 2pm."),),
      (("Can my {who} come in for a {service} on {day}?",
        "Yes, a {service} for your {who} on {day} is possible, at 9am or 2pm."),),
      "Do I need to bring anything?", "Is there anything I should bring along?",
      {"service": ("swapped_choice", (("check-up",), ("cleaning",), ("filling",))),
       "day": ("value_changed", (("Tuesday the 8th", "Tue 8th"), ("Thursday the 18th", "Thu 18th"))),
       "who": ("swapped_choice", (("son",), ("mother",)))}),
    F("data_export", "software", "You are the help assistant of Sheetly, an online spreadsheet.",
      (("I need to export the {sheet} sheet as {format}.",
        "The {sheet} sheet can be exported as {format} from the File menu."),),
      (("How can I get the {sheet} sheet out in {format} format?",
        "Open File and pick {format}: that exports the {sheet} sheet."),),
      "Will the formulas be kept?", "Do the formulas survive the export?",
      {"sheet": ("value_changed", (("Q3 budget",), ("Q4 budget",), ("2025 forecast",))),
       "format": ("swapped_choice", (("PDF",), ("CSV",), ("Excel",)))}),
    F("bike_service", "retail", "You are the workshop assistant of Spokes Bike Repair.",
      (("My {bike} has a {fault} and I want it fixed before {date}.",
        "We can fix a {fault} on a {bike} before {date}. I can {intent} for you."),),
      (("There's a {fault} on my {bike}, and I need it sorted by {date}.",
        "A {fault} on a {bike} is quick to fix before {date}, and I'm able to {intent}."),),
      "How much will it cost?", "What's the likely price?",
      {"bike": ("swapped_choice", (("road bike",), ("e-bike",), ("kids' bike",))),
       "fault": ("swapped_choice", (("flat tyre",), ("broken chain",), ("squeaky brake",))),
       "date": ("value_changed", (("Friday", "this Friday"), ("Saturday", "this Saturday"))),
       "intent": ("other_intent", (("book a slot",), ("arrange a pickup",)))}),
)

# Small talk and asides by part: numbers, names, places and negations that the answer does not depend on.
GREETINGS = {
    "holdout": ("Morning!", "Hey there, hope all's good.", "Hello hello."),
    "dev": ("Hi there!", "Hello, good morning.", "Hey!", "Hi, I hope you're well."),
    "test": ("Good evening!", "Hiya.", "Hello there, hope your day's going okay.", "Hi again."),
}
# Each small-talk sentence with the assistant's echo of it ("" for none).
SMALL_TALK = {
    "holdout": (("My brother Sam is visiting from Leeds this week and he's taken over the sofa.",
                 "Enjoy the time with Sam!"),
                ("I'm not great at remembering passwords, so bear with me if I get things wrong.", ""),
                ("It's been raining for 5 days straight here, the garden is a swamp.", "Hope the rain stops soon."),
                ("My cat knocked my coffee over the keyboard an hour ago, so typing is an adventure.",
                 "Oh no, poor keyboard!"),
                ("I've been meaning to ask this for about 3 weeks but kept forgetting.", ""),
                ("We just got back from Lisbon on Sunday and I'm still catching up on everything.",
                 "Welcome back from Lisbon!"),
                ("No idea if this is the right place to ask, honestly.", ""),
                ("I turned 60 last month and my grandson Leo set up this chat thing for me.",
                 "Happy belated 60th!"),
                ("Work has been hectic since our team moved to the new office on the 2nd floor.", "")),
    "dev": (("My son turned 7 last week and the house is still full of balloons and half-eaten cake.",
             "Happy belated birthday to your son!"),
            ("I've already spent 40 minutes on hold with my phone company today, so thank you for having a chat "
             "option, honestly it makes such a difference.", ""),
            ("It's not been the best week, if I'm honest, work has been non-stop since Monday.",
             "Sorry to hear it's been a rough week."),
            ("We're off to Cornwall on the 12th with the kids, so I'm trying to get everything sorted before then.",
             "Cornwall sounds lovely, enjoy it!"),
            ("I'm not very good with this kind of thing, my wife usually handles it but she's away.", ""),
            ("My neighbour Dave recommended you, actually, he said you sorted his problem in no time.",
             "Please thank Dave for us!"),
            ("I've been a customer for about 6 years now and never had to get in touch before.",
             "Thanks for being with us for so long."),
            ("Sorry, I'm typing this on my phone on the train, so excuse any typos.", ""),
            ("No rush on this at all, I know you must be busy.", "")),
    "test": (("My daughter Emma starts school on Monday, so it's been a hectic few days of buying uniforms.",
              "Good luck to Emma on her first day!"),
             ("I'm writing this from a café in Porto, the coffee here is amazing and so cheap.",
              "Enjoy the coffee in Porto!"),
             ("I don't usually contact support, I hate bothering people with questions like this.", ""),
             ("We had 3 inches of snow last night so I'm stuck at home anyway, might as well deal with this.",
              "Stay warm out there."),
             ("I've had about 2 hours of sleep because the baby was up all night, so bear with me.",
              "Sounds exhausting, hope you get some rest."),
             ("My colleague Priya said you were really helpful last time she had an issue.", ""),
             ("I'm not a tech person at all, never have been, my kids laugh at me.", ""),
             ("It's my 40th birthday tomorrow, ha, so I'd like this off my plate before the party.",
              "Happy early birthday!"),
             ("Apologies in advance if I ramble, it's been a long shift at the hospital.", "")),
}
LEADS = {
    "holdout": ("Anyway, what I actually wanted:", "So here goes.", "Right, my question."),
    "dev": ("Anyway, here's my question.", "So, the reason I'm writing:", "Anyway, to the point."),
    "test": ("Right, the actual reason I'm messaging.", "Okay, so here's the thing.", "Anyway."),
}
CLOSERS = {
    "holdout": ("Cheers in advance!", "Thanks a million.", "Sorry for rambling."),
    "dev": ("Thanks so much in advance.", "Sorry for the essay!", "Cheers."),
    "test": ("Thank you, really appreciate it.", "Sorry, that was a lot of text.", "Many thanks."),
}
UNRELATED = {
    "holdout": (("Do you have an office in Manchester?", "No, we're fully online, with support from 8am to 8pm."),
                ("How do I change my password?", "Go to Account, then Security, and choose Change password."),
                ("Is there a student discount?", "Yes, 15% with a valid student email.")),
    "dev": (("Do you ship to Canada?", "Yes, shipping to Canada takes 5 to 7 business days."),
            ("What's your phone number?", "You can call us on 0800 555 0199, 9am to 5pm on weekdays."),
            ("Can I change the email address on my profile?", "Yes, go to Settings and then Profile to edit it.")),
    "test": (("Do you sell gift vouchers?", "We do, from $10 up to $200, and they never expire."),
             ("Is your website down? It was really slow this morning.",
              "There was a short outage around 8am, it's working normally now."),
             ("Are you open on bank holidays?", "Our chat is open every day except December 25.")),
}


def _spell(values: dict[str, tuple[str, ...]], alternate: bool) -> dict[str, str]:
    return {k: (v[-1] if alternate else v[0]) for k, v in values.items()}


def _render(turns: Turns, values: dict[str, str]) -> list[list[str]]:
    return [[u.format(**values), a.format(**values)] for u, a in turns]


def _messages(family: Family, exchanges: list[list[str]], follow: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": family.system}]
    for user, assistant in exchanges:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return [*messages, {"role": "user", "content": follow}]


def _at_length(exchanges: list[list[str]], part: str, rng: random.Random) -> list[list[str]]:
    """The request told inside greetings and several small-talk sentences, the reply opening with an echo."""
    out = [list(e) for e in exchanges]
    talk = rng.sample(SMALL_TALK[part], rng.randint(4, 8))
    before, after = talk[: len(talk) // 2 + 1], talk[len(talk) // 2 + 1:]
    out[0][0] = " ".join([rng.choice(GREETINGS[part]), *(t for t, _ in before), rng.choice(LEADS[part]), out[0][0],
                          *(t for t, _ in after), rng.choice(CLOSERS[part])])
    echoes = [e for _, e in talk if e]
    if echoes:
        out[0][1] = f"{rng.choice(echoes)} {out[0][1]}"
    if len(out) > 1 and rng.random() < 0.5:
        out[-1][0] = f"{out[-1][0]} {rng.choice(SMALL_TALK[part])[0]}"
    return out


@dataclass
class _Pairs:
    part: str
    rng: random.Random
    rows: list[dict[str, object]] = field(default_factory=list)

    def add(self, family: Family, kind: str, same: bool, a: list[dict[str, str]], b: list[dict[str, str]]) -> None:
        n = len(self.rows) + 1
        self.rows.append({"id": f"c3-{family.name}-{n:03d}-{self.part}", "a": a, "b": b, "kind": kind,
                          "same_answer": same, "domain": family.domain, "family": family.name,
                          "api": APIS[n % len(APIS)]})


def family_pairs(family: Family, others: list[Family], out: _Pairs) -> None:
    """One pair of each kind for one draw of the family's slots."""
    rng, part = out.rng, out.part
    drawn = {name: rng.choice(pool) for name, (_, pool) in family.slots.items()}
    values = _spell(drawn, alternate=False)
    base_turns = _render(family.turns, values)
    base = _messages(family, base_turns, family.follow)
    out.add(family, "reworded_context", True, base,
            _messages(family, _render(family.reworded, _spell(drawn, alternate=True)), family.follow))
    out.add(family, "chatter", True, base, _messages(family, _at_length(base_turns, part, rng), family.follow))
    history = [list(rng.choice(UNRELATED[part])), *base_turns]
    if rng.random() < 0.5:
        history = _at_length(history[1:], part, rng)
        history.insert(0, list(rng.choice(UNRELATED[part])))
    out.add(family, "irrelevant_history", True, base, _messages(family, history, family.follow))
    told = _at_length(base_turns, part, rng) if rng.random() < 0.5 else base_turns
    out.add(family, "reworded_follow_up", True, base, _messages(family, told, family.follow_reworded))
    for name, (kind, pool) in family.slots.items():
        changed = {**values, name: rng.choice([v for v in pool if v != drawn[name]])[0]}
        exchanges = _render(family.reworded if rng.random() < 0.3 else family.turns, changed)
        if rng.random() < 0.5:
            exchanges = _at_length(exchanges, part, rng)
        out.add(family, kind, False, base, _messages(family, exchanges, family.follow))
    other = rng.choice(others)
    other_values = _spell({n: rng.choice(pool) for n, (_, pool) in other.slots.items()}, alternate=False)
    swapped = _messages(other, _render(other.turns, other_values), family.follow)
    swapped[0] = {"role": "system", "content": family.system}  # one deployment: the same system prompt
    out.add(family, "different_context", False, base, swapped)


def build(seed: int = SEED) -> dict[str, list[dict[str, object]]]:
    parts = {f.name: ("dev", "test")[i % 2] for i, f in enumerate(FAMILIES)} | {f.name: "holdout" for f in HOLDOUT}
    rows: dict[str, list[dict[str, object]]] = {}
    for part in ("dev", "test", "holdout"):
        members = [f for f in (*FAMILIES, *HOLDOUT) if parts[f.name] == part]
        out = _Pairs(part, random.Random(f"{seed}-{part}"))
        for _ in range(DRAWS):
            for family in members:
                family_pairs(family, [f for f in members if f is not family], out)
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
