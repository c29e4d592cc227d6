"""More training rows in the Mobile Actions layout, made from templates and value lists of this
file's own (the phone-actions catalog of ../shared/fixtures/eval; never its eval split).

python generate_rows.py --catalog-from DATA.jsonl --count 600 --seed 7 --out generated.jsonl \
    [--subsets 24 --rows-per-subset 6]

With --subsets N, N shuffled subsets of the catalog (3 to 8 of its tools, in a random order) get
--rows-per-subset rows each: calls of tools in the subset, some no-call rows. Apps send the tools a
screen offers, not always the whole catalog, and the order of a list must not steer the choice.
"""
import argparse
import json
import random

# Given and family names common across many countries (a surname that is also a place or a word,
# as many are, must still be copied as said).
FIRST = ["Alma", "Bruno", "Carla", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca",
         "Maya", "Nikos", "Olga", "Pavel", "Rosa", "Sami", "Tomas", "Uma", "Vera", "Wen", "Yara", "Zoe", "Aiko",
         "Ben", "Chloe", "Diego", "Emma", "Fatima", "Gabriel", "Hana", "Ivan", "Jin", "Leila", "Mateo", "Nadia",
         "Omar", "Priya", "Ravi", "Sofia", "Tariq", "Ana", "Kofi", "Mei", "Noah", "Zara", "Lars"]
LAST = ["Abbott", "Berg", "Castro", "Duarte", "Eriksen", "Fischer", "Gomez", "Haddad", "Iversen", "Janssen",
        "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Oliveira", "Petrov", "Quinn", "Silva", "Tanaka", "Weber",
        "Garcia", "Smith", "Kim", "Nguyen", "Rossi", "Santos", "Costa", "Ferreira", "Mueller", "Jones", "Khan",
        "Ali", "Chen", "Wang", "Singh", "Kumar", "Sato", "Suzuki", "Ito", "Novak", "Horvat", "Popescu", "Ivanova",
        "Brown", "Martin", "Lopez", "Hill", "Park", "Lee", "Jordan", "Paris", "London", "Holland", "Florence",
        "Washington", "Green", "Stone", "Rivers", "Brooks", "King"]
PLACES = ["the train station", "the old harbour", "Riverside Mall", "the nearest bakery", "City Hospital",
          "the public library", "45 Elm Street", "Sunset Beach", "the zoo", "Grand Hotel", "the bus terminal",
          "Maple Avenue 7", "the closest gas station", "Central Park", "the football stadium"]
EVENTS = ["Dinner with Sam", "Piano lesson", "Board meeting", "Doctor appointment", "Haircut", "Book club",
          "Project review", "Swimming", "Birthday party", "Job interview", "Coffee with Lina", "Gym session"]
SUBJECTS = ["Weekend plans", "Quarterly report", "Party invite", "Budget draft", "Holiday schedule",
            "Contract update", "Welcome aboard", "Rent receipt"]
BODIES = ["Call me when you can.", "Running ten minutes late.", "The files are ready.", "Happy birthday!",
          "Let us meet tomorrow.", "Got it, thanks."]
LABELS = ["wake up", "meds", "school run", "meeting", "laundry", "take out bread"]
NO_CALL = ["hello there", "how are you?", "who made you?", "what's the weather like?", "thank you",
           "ok", "help", "can you sing a song?", "what time is it in Tokyo?", "bye", "cool, thanks",
           "what's 2 plus 2?", "I'm bored", "hi", "never mind, forget it", "what are your features?"]
NO_CALL_ANSWER = ("I can help with your phone's flashlight, contacts, email, maps, Wi-Fi, calendar, alarms "
                  "and volume.")


def _contact(r):
    first, last = r.choice(FIRST), r.choice(LAST)
    args = {"first_name": first, "last_name": last}
    phone = "+1 555 %03d %04d" % (r.randrange(1000), r.randrange(10000))
    email = f"{first.lower()}.{last.lower()}@example.com"
    kind = r.randrange(4)
    extra = ""
    if kind in (1, 3):
        args["phone_number"] = phone
        extra += f", phone {phone}"
    if kind in (2, 3):
        args["email"] = email
        extra += f", email {email}"
    text = r.choice([f"Add {first} {last} to my contacts{extra}", f"Save {first} {last} as a new contact{extra}",
                     f"New contact: {first} {last}{extra}"])
    return text, "create_contact", args


def _email(r):
    who = r.choice(FIRST).lower() + r.choice(["", str(r.randrange(100))]) + "@" + \
        r.choice(["example.com", "example.org", "mail.example.net"])
    subject = r.choice(SUBJECTS)
    args = {"to": who, "subject": subject}
    if r.random() < 0.6:
        body = r.choice(BODIES)
        args["body"] = body
        text = r.choice([f'Email {who} with the subject "{subject}" saying {body}',
                         f'Send an email to {who}, subject "{subject}", saying {body}'])
    else:
        text = r.choice([f'Email {who} with the subject "{subject}"', f'Send {who} an email titled "{subject}"'])
    return text, "send_email", args


def _map(r):
    place = r.choice(PLACES)
    text = r.choice([f"Where is {place}?", f"Show me {place} on the map", f"Open the map at {place}",
                     f"Find {place} on the map", f"Navigate to {place}"])
    return text, "show_map", {"query": place}


def _calendar(r):
    title = r.choice(EVENTS)
    date = "2027-%02d-%02d" % (r.randint(1, 12), r.randint(1, 28))
    h, m = r.randrange(24), r.choice([0, 15, 30, 45])
    text = r.choice([f"Put {title} in my calendar on {date} at {h:02d}:{m:02d}",
                     f"Schedule {title} on {date} at {h:02d}:{m:02d}",
                     f"Add {title} to my calendar for {date} at {h:02d}:{m:02d}"])
    return text, "create_calendar_event", {"title": title, "datetime": f"{date}T{h:02d}:{m:02d}:00"}


def _alarm(r):
    h, m = r.randrange(24), r.randrange(60)
    args = {"hour": h, "minute": m}
    if r.random() < 0.35:  # most alarms are set without a name: none must be invented
        label = r.choice(LABELS)
        args["label"] = label
        text = r.choice([f"Set an alarm for {h:02d}:{m:02d} called {label}", f"Alarm at {h:02d}:{m:02d} labelled {label}"])
    else:
        text = r.choice([f"Set an alarm for {h:02d}:{m:02d}", f"Wake me up at {h:02d}:{m:02d}", f"Alarm at {h:02d}:{m:02d}"])
    return text, "set_alarm", args


def _volume(r):
    level = r.randrange(0, 101, 5)
    text = r.choice([f"Volume to {level} percent", f"Set the volume to {level}", f"Change media volume to {level}%"])
    return text, "set_volume", {"level": level}


def _fixed(name, phrases):
    return lambda r: (r.choice(phrases), name, {})


MAKERS = [_contact, _email, _map, _calendar, _alarm, _volume,
          _fixed("turn_on_flashlight", ["Turn on the flashlight", "flashlight on", "torch on", "It's dark, light please",
                                        "switch on the torch"]),
          _fixed("turn_off_flashlight", ["Turn off the flashlight", "flashlight off", "kill the torch",
                                         "switch the torch off"]),
          _fixed("open_wifi_settings", ["Open the Wi-Fi settings", "wifi settings", "show me the wireless settings",
                                        "I need to connect to a new wifi"])]


def _row(r, catalog, makers, no_call_share):
    if r.random() < no_call_share:
        return {"metadata": "train", "tools": catalog,
                "messages": [{"role": "user", "content": r.choice(NO_CALL)},
                             {"role": "assistant", "content": NO_CALL_ANSWER}]}
    text, name, args = r.choice(makers)(r)
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return {"metadata": "train", "tools": catalog,
            "messages": [{"role": "user", "content": text}, {"role": "assistant", "tool_calls": [call]}]}


def _maker_name(maker):
    return maker(random.Random(0))[1]


def generate(catalog, count, seed, no_call_share=0.15, subsets=0, rows_per_subset=6):
    r = random.Random(seed)
    rows = [_row(r, catalog, MAKERS, no_call_share) for _ in range(count)]
    by_name = {_maker_name(m): m for m in MAKERS}
    for _ in range(subsets):
        tools = r.sample(catalog, r.randint(3, min(8, len(catalog) - 1)))  # sample() also shuffles
        makers = [by_name[t["function"]["name"]] for t in tools if t["function"]["name"] in by_name]
        rows += [_row(r, tools, makers, no_call_share) for _ in range(rows_per_subset)]
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--catalog-from", required=True, help="a Mobile Actions JSONL whose widest train-row catalog is used")
    p.add_argument("--count", type=int, default=600)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--subsets", type=int, default=0, help="shuffled subsets of the catalog to write rows on")
    p.add_argument("--rows-per-subset", type=int, default=6)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    train = [json.loads(l) for l in open(a.catalog_from) if json.loads(l)["metadata"] == "train"]
    catalog = max((row["tools"] for row in train), key=len)
    with open(a.out, "w") as f:
        for row in generate(catalog, a.count, a.seed, subsets=a.subsets, rows_per_subset=a.rows_per_subset):
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
