"""The commands of every front end, declared once (`table`), with what their handlers talk to (`console`) and how
slash lines run them (`slash`)."""
