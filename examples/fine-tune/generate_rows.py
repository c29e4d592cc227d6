"""More training rows in the Mobile Actions layout, made from templates and value lists of this
file's own (the phone-actions catalog of ../shared/fixtures/eval; never its eval split).

python generate_rows.py --catalog-from DATA.jsonl --count 600 --seed 7 --out generated.jsonl
"""
import argparse
import json
import random

FIRST = ["Alma", "Bruno", "Carla", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca",
         "Maya", "Nikos", "Olga", "Pavel", "Rosa", "Sami", "Tomas", "Uma", "Vera", "Wen", "Yara", "Zoe"]
LAST = ["Abbott", "Berg", "Castro", "Duarte", "Eriksen", "Fischer", "Gomez", "Haddad", "Iversen", "Janssen",
        "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Oliveira", "Petrov", "Quinn", "Silva", "Tanaka", "Weber"]
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
    who = r.choice(FIRST).lower() + "@example.com"
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
    if r.random() < 0.5:
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


def generate(catalog, count, seed, no_call_share=0.15):
    r = random.Random(seed)
    rows = []
    for i in range(count):
        if r.random() < no_call_share:
            rows.append({"metadata": "train", "tools": catalog,
                         "messages": [{"role": "user", "content": r.choice(NO_CALL)},
                                      {"role": "assistant", "content": NO_CALL_ANSWER}]})
            continue
        text, name, args = r.choice(MAKERS)(r)
        call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        rows.append({"metadata": "train", "tools": catalog,
                     "messages": [{"role": "user", "content": text}, {"role": "assistant", "tool_calls": [call]}]})
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--catalog-from", required=True, help="a Mobile Actions JSONL whose widest train-row catalog is used")
    p.add_argument("--count", type=int, default=600)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    train = [json.loads(l) for l in open(a.catalog_from) if json.loads(l)["metadata"] == "train"]
    catalog = max((row["tools"] for row in train), key=len)
    with open(a.out, "w") as f:
        for row in generate(catalog, a.count, a.seed):
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
