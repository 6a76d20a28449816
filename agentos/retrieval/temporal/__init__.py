"""Temporal expressions in a query, resolved against a reference time into a range of whole UTC days.

Pure parsing, no storage. `resolver.resolve_time` finds "last week", "in May 2023", "two days ago", "before
Christmas" and the like; `questions.asks_when` says whether the answer to a question is itself a time;
`resolver.without_time` strips the temporal words so keyword search sees only the rest.

Modules, lowest first: `words` (names, count words, pattern atoms), `ranges` (calendar arithmetic on day ranges),
`absolute` and `relative` (one resolver per kind of phrase), `rules` (the rule table and a query's phrases), `spans`
(modifiers, "from X to Y", shared years, event offsets), `resolver` (the public entry points), `questions`.
This package file only documents; import from the modules.

Conventions:
- ranges are whole days in UTC, with inclusive ends (the last microsecond of the last day);
- weeks start on Monday; a weekend is the Saturday and Sunday of its Monday-to-Sunday week;
- "last Friday" and "on Friday" are the most recent Friday strictly before today (1 to 7 days back),
  "next Friday" the first one strictly after today, "this Friday" the Friday of the current week;
- "N days ago" is that day; "N weeks/months/years ago" is a window one unit wide centred on that point;
  "a couple of" counts 2 and "a few"/"several" 3, both widened by one unit each way;
- a date or month written without its year is the most recent one not after today, unless the query
  names a single year elsewhere ("in 2022, on May 8" is 8 May 2022);
- seasons are northern-hemisphere meteorological ones; the winter of Y runs from December Y to February Y+1;
- "before/after X" is the year before X starts or after X ends; "since X" runs from X to today;
- "two days before X", "the week after X", "the Sunday before X" and "last weekend before X" are placed against X
  (a weekday strictly before or after it), not against today;
- an offset from an event ("two days before the trip") cannot be placed: alone it resolves to nothing,
  next to a resolvable time it widens that range by the offset, so the range still holds the answer.
"""
