insert into data (filler) values (repeat(' ',:scale));
